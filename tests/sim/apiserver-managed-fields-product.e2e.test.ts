// The compiled binary's own writes as the simulated API server records them: its PATCHes carry
// ?fieldManager=image-refresh, so after a refresh the pinned images belong to `image-refresh`
// and nothing else moved (without it the apiserver would name the manager after the User-Agent up
// to its first slash, `Bun`: apiserver handlers/create.go managerOrUserAgent); the bookkeeping is
// in the store, so no annotation of a workload is ours.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { FIELD_MANAGER, imageOwners } from "../../lib/kube/managed-fields.ts";
import { PREFIX, recorded, STORE_PATH, startWorld, type World } from "../support/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(() => w.stop());

test("a refresh leaves the pinned images owned by image-refresh, and no workload annotation", async () => {
  await recorded(w);
  w.registry.push("myorg/api", "stable");
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("refreshed:");
  const patches = w.api.log.filter((e) => e.method === "PATCH");
  expect(patches.length).toBeGreaterThan(0);
  for (const p of patches) expect(p.query.fieldManager).toBe(FIELD_MANAGER);
  const managers = (kind: "Deployment", name: string, c: string) =>
    imageOwners(w.api.getObject(kind, "apps", name).metadata.managedFields, c).map((o) => o.manager);
  expect(managers("Deployment", "api", "api")).toEqual([FIELD_MANAGER]);
  expect(managers("Deployment", "api-proxy", "proxy")).toEqual([FIELD_MANAGER]);
  expect(managers("Deployment", "api", "sidecar")).toEqual(["kubectl-client-side-apply"]); // untouched
  // The bookkeeping lives in the store: image-refresh owns no annotation of any workload.
  for (const name of ["api", "api-proxy"]) {
    const meta = w.api.getObject("Deployment", "apps", name).metadata;
    const ours = meta.managedFields.find((e: { manager: string }) => e.manager === FIELD_MANAGER);
    expect(ours).toBeDefined();
    expect([name, ours.fieldsV1["f:metadata"]?.["f:annotations"]]).toEqual([name, undefined]);
    const annotations = Object.keys(meta.annotations ?? {}).filter((a) => a.startsWith(`${PREFIX}/`));
    expect([name, annotations]).toEqual([name, []]);
  }
  // The store's PATCH (with the rest) carried the field manager; the record is there.
  expect(patches.some((p) => p.path === STORE_PATH)).toBe(true);
  expect(w.book()["last-refreshed-api-digest"]).toMatch(/^sha256:/);
});
