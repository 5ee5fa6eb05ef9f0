// The compiled binary's own writes as the simulated API server records them: its PATCHes carry
// ?fieldManager=image-refresh, so after a refresh the pinned images and the bookkeeping
// annotations belong to `image-refresh` and nothing else moved (reference §1.3 "→ us").
import { afterAll, beforeAll, expect, test } from "bun:test";
import { FIELD_MANAGER, imageOwners } from "../../lib/kube/managed-fields.ts";
import { PREFIX, recorded, startWorld, type World } from "../support/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(() => w.stop());

test("a refresh leaves the pinned images and the state annotations owned by image-refresh", async () => {
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
  const state = w.api.getObject("Deployment", "apps", "api").metadata;
  const ours = state.managedFields.find((e: { manager: string }) => e.manager === FIELD_MANAGER);
  const keys = Object.keys(ours.fieldsV1["f:metadata"]["f:annotations"]);
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect(key.startsWith(`f:${PREFIX}/`)).toBe(true);
  const stateKeys = Object.keys(state.annotations).filter((a) => a.startsWith(`${PREFIX}/`));
  expect(keys.sort()).toEqual(stateKeys.map((a) => `f:${a}`).sort());
});
