// The simulated ConfigMaps answer as kube-apiserver does: exact Status bodies for NotFound,
// AlreadyExists and a failed resourceVersion precondition, unconditional patches, and RBAC by
// resourceNames (which cannot limit `create`: a create's URL names no object).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, patch } from "./driver.ts";
import { type SimApiServer, startApiServer } from "./index.ts";

let sim: SimApiServer;
beforeAll(async () => {
  sim = await startApiServer({ now: () => new Date("2026-12-01T12:00:00Z") });
  sim.ensureNamespace("image-refresh");
});
afterAll(() => sim.stop());

const BASE = "/api/v1/namespaces/image-refresh/configmaps";
const MERGE = "application/merge-patch+json";
const create = (name: string, data: Record<string, string>, ns = "image-refresh") =>
  call(sim, `/api/v1/namespaces/${ns}/configmaps`, { method: "POST", body: { metadata: { name }, data } });

describe("simulated ConfigMaps", () => {
  test("GET of a missing one: the real NotFound, with the server's Date", async () => {
    const r = await call(sim, `${BASE}/none`);
    expect(r.status).toBe(404);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'configmaps "none" not found',
      reason: "NotFound",
      details: { name: "none", kind: "configmaps" },
      code: 404,
    });
    expect(r.headers.get("date")).toBe("Tue, 01 Dec 2026 12:00:00 GMT");
  });

  test("create, then create again: 409 AlreadyExists", async () => {
    const first = await create("a", { k: "1" });
    expect(first.status).toBe(201);
    expect(first.json.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(first.json.data).toEqual({ k: "1" });
    const again = await create("a", { k: "2" });
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({
      reason: "AlreadyExists",
      message: 'configmaps "a" already exists',
      details: { name: "a", kind: "configmaps" },
      code: 409,
    });
    expect(sim.getConfigMap("image-refresh", "a").data).toEqual({ k: "1" });
  });

  test("create in a namespace that does not exist: 404 naming the namespace", async () => {
    const r = await create("a", {}, "nowhere");
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({
      message: 'namespaces "nowhere" not found',
      details: { name: "nowhere", kind: "namespaces" },
    });
  });

  test("a merge patch with the current resourceVersion applies; a stale one is 409 Conflict", async () => {
    const made = await create("b", { x: "1", y: "2" });
    const rv = made.json.metadata.resourceVersion;
    const ok = await patch(sim, `${BASE}/b`, MERGE, {
      metadata: { resourceVersion: rv },
      data: { x: "3", y: null },
    });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toEqual({ x: "3" });
    expect(ok.json.metadata.resourceVersion).not.toBe(rv);
    const stale = await patch(sim, `${BASE}/b`, MERGE, {
      metadata: { resourceVersion: rv },
      data: { x: "4" },
    });
    expect(stale.status).toBe(409);
    expect(stale.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'Operation cannot be fulfilled on configmaps "b": the object has been modified; please apply your changes to the latest version and try again',
      reason: "Conflict",
      details: { name: "b", kind: "configmaps" },
      code: 409,
    });
    expect(sim.getConfigMap("image-refresh", "b").data).toEqual({ x: "3" });
  });

  test("without a resourceVersion a patch is unconditional; removing an absent key changes nothing", async () => {
    const made = await create("c", { x: "1" });
    const rv = made.json.metadata.resourceVersion;
    const none = await patch(sim, `${BASE}/c`, MERGE, { data: { gone: null } });
    expect(none.status).toBe(200);
    expect(none.json.metadata.resourceVersion).toBe(rv);
    const strategic = await patch(sim, `${BASE}/c`, "application/strategic-merge-patch+json", {
      data: { y: "2" },
    });
    expect(strategic.json.data).toEqual({ x: "1", y: "2" });
    const json = await patch(sim, `${BASE}/c`, "application/json-patch+json", [
      { op: "test", path: "/data/x", value: "9" },
      { op: "replace", path: "/data/x", value: "3" },
    ]);
    expect(json.status).toBe(422);
    expect(sim.getConfigMap("image-refresh", "c").data).toEqual({ x: "1", y: "2" });
  });

  test("an invalid data key is 422 Invalid; PATCH of a missing one is 404", async () => {
    await create("d", {});
    const bad = await patch(sim, `${BASE}/d`, MERGE, { data: { "no spaces": "x" } });
    expect(bad.status).toBe(422);
    expect(bad.json.reason).toBe("Invalid");
    expect(bad.json.message).toStartWith('ConfigMap "d" is invalid: data[no spaces]: Invalid value');
    expect((await patch(sim, `${BASE}/none`, MERGE, { data: {} })).status).toBe(404);
  });

  test("RBAC: get/patch by resourceNames; create is never matched by resourceNames", async () => {
    await create("store", {});
    const user = "system:serviceaccount:image-refresh:image-refresh";
    const named = {
      namespace: "image-refresh",
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: ["store"],
    };
    sim.setRbac({ user, rules: [{ ...named, verbs: ["get", "patch", "create"] }] });
    try {
      expect((await call(sim, `${BASE}/store`)).status).toBe(200);
      expect((await patch(sim, `${BASE}/store`, MERGE, { data: { a: "1" } })).status).toBe(200);
      expect((await call(sim, `${BASE}/other`)).status).toBe(403);
      const denied = await create("fresh", {});
      expect(denied.status).toBe(403);
      expect(denied.json.message).toBe(
        `configmaps is forbidden: User "${user}" cannot create resource "configmaps" in API group "" in the namespace "image-refresh"`,
      );
      sim.setRbac({
        user,
        rules: [
          { namespace: "image-refresh", apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
        ],
      });
      expect((await create("fresh", {})).status).toBe(201);
    } finally {
      sim.setRbac(undefined);
    }
  });
});
