// PATCH on the simulated API server: the three engines, preconditions, no-op writes and the
// per-kind generation rules (kubernetes pkg/registry/apps/*/strategy.go; apiserver handlers/patch.go).
import { afterAll, describe, expect, test } from "bun:test";
import { objectPath, patch, workloadMaker } from "../../sim/apiserver/driver.ts";
import { startApiServer, type WorkloadKind } from "../../sim/apiserver/index.ts";

const sim = await startApiServer({ stepMs: 5 });
afterAll(() => sim.stop());

const MERGE = "application/merge-patch+json";
const SMP = "application/strategic-merge-patch+json";
const JSONP = "application/json-patch+json";
/** A fresh workload per test so tests never see each other's writes. */
const fresh = workloadMaker(sim);

const images = (o: {
  spec: { template: { spec: { containers: Array<{ name: string; image: string }> } } };
}) => o.spec.template.spec.containers.map((c) => `${c.name}=${c.image}`);

describe("merge patch (RFC 7386)", () => {
  test("sets, overwrites and null-deletes annotations, keeping the others", async () => {
    const w = fresh("Deployment", { "keep.io/x": "1", "x.io/old": "a" });
    const r = await patch(sim, w.path, MERGE, {
      metadata: { annotations: { "x.io/new": "b", "x.io/old": null } },
    });
    expect(r.status).toBe(200);
    expect(r.json.metadata.annotations).toMatchObject({ "keep.io/x": "1", "x.io/new": "b" });
    expect(r.json.metadata.annotations["x.io/old"]).toBeUndefined();
  });

  test("replaces a list wholesale (why clients must not pin images with it)", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, MERGE, {
      spec: { template: { spec: { containers: [{ name: "app", image: "myorg/app:2" }] } } },
    });
    expect(images(r.json)).toEqual(["app=myorg/app:2"]);
    expect(r.json.spec.template.spec.containers[0].imagePullPolicy).toBe("IfNotPresent"); // re-defaulted
  });

  test("the charset parameter is stripped from the content type", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, `${MERGE}; charset=utf-8`, { metadata: { annotations: { a: "b" } } });
    expect(r.status).toBe(200);
  });

  test("an undecodable body is a 400 BadRequest", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, MERGE, "{not json");
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ kind: "Status", reason: "BadRequest", code: 400 });
  });
});

describe("strategic merge patch", () => {
  test("merges containers by name, as kubectl set image sends it", async () => {
    const w = fresh();
    const body = {
      spec: {
        template: {
          spec: {
            "$setElementOrder/containers": [{ name: "app" }, { name: "sidecar" }],
            containers: [{ image: "myorg/app@sha256:abc", name: "app" }],
          },
        },
      },
    };
    const r = await patch(sim, w.path, SMP, body);
    expect(images(r.json)).toEqual(["app=myorg/app@sha256:abc", "sidecar=myorg/sidecar:1"]);
    expect(r.json.spec.template.spec.containers[0].terminationMessagePath).toBe("/dev/termination-log");
  });

  test("merges initContainers by name too", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { initContainers: [{ name: "init", image: "myorg/init:2" }] } } },
    });
    expect(r.json.spec.template.spec.initContainers.map((c: { image: string }) => c.image)).toEqual([
      "myorg/init:2",
    ]);
    expect(images(r.json)).toEqual(["app=myorg/app:1", "sidecar=myorg/sidecar:1"]);
  });

  test("an unknown container name is appended, not rejected", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { containers: [{ name: "typo", image: "x:1" }] } } },
    });
    expect(images(r.json)).toEqual(["app=myorg/app:1", "sidecar=myorg/sidecar:1", "typo=x:1"]);
  });

  test("$setElementOrder reorders; $patch: delete removes an element", async () => {
    const w = fresh();
    const reordered = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { "$setElementOrder/containers": [{ name: "sidecar" }, { name: "app" }] } } },
    });
    expect(images(reordered.json)).toEqual(["sidecar=myorg/sidecar:1", "app=myorg/app:1"]);
    const deleted = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { containers: [{ name: "sidecar", $patch: "delete" }] } } },
    });
    expect(images(deleted.json)).toEqual(["app=myorg/app:1"]);
  });

  test("rollout restart's template annotation; maps null-delete like merge patch", async () => {
    const w = fresh();
    const at = "2025-01-02T03:04:05Z";
    const r = await patch(sim, w.path, SMP, {
      spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": at } } } },
    });
    expect(r.json.spec.template.metadata.annotations).toEqual({ "kubectl.kubernetes.io/restartedAt": at });
    const removed = await patch(sim, w.path, SMP, {
      spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": null } } } },
    });
    expect(removed.json.spec.template.metadata.annotations).toEqual({});
  });

  test("an element without its merge key is a 500 with no reason", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { containers: [{ image: "x" }] } } },
    });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "map: map[image:x] does not contain declared merge key: name",
      code: 500,
    });
  });
});

describe("resourceVersion precondition", () => {
  for (const type of [MERGE, SMP]) {
    test(`${type}: a stale metadata.resourceVersion is 409 Conflict with the real message`, async () => {
      const w = fresh();
      const rv = w.get().metadata.resourceVersion;
      sim.setAnnotations("Deployment", "apps", w.name, { "other.io/writer": "x" });
      const r = await patch(sim, w.path, type, {
        metadata: { resourceVersion: rv, annotations: { a: "1" } },
      });
      expect(r.status).toBe(409);
      expect(r.json).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `Operation cannot be fulfilled on deployments.apps "${w.name}": the object has been modified; please apply your changes to the latest version and try again`,
        reason: "Conflict",
        details: { name: w.name, group: "apps", kind: "deployments" },
        code: 409,
      });
      expect(w.get().metadata.annotations.a).toBeUndefined();
    });

    test(`${type}: the current resourceVersion lets the write through`, async () => {
      const w = fresh();
      const rv = w.get().metadata.resourceVersion;
      const r = await patch(sim, w.path, type, {
        metadata: { resourceVersion: rv, annotations: { a: "1" } },
      });
      expect(r.status).toBe(200);
      expect(r.json.metadata.resourceVersion).not.toBe(rv);
    });
  }

  test("a JSON patch replace of /metadata/resourceVersion is a precondition too", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, JSONP, [
      { op: "replace", path: "/metadata/resourceVersion", value: "1" },
      { op: "add", path: "/metadata/labels/x", value: "y" },
    ]);
    expect(r.status).toBe(409);
  });

  test("names are checked against the URL", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, MERGE, { metadata: { name: "other" } });
    expect(r.status).toBe(400);
    expect(r.json.message).toBe(
      `the name of the object (other) does not match the name on the URL (${w.name})`,
    );
  });
});

describe("writes and resourceVersion", () => {
  test("every real write bumps the resourceVersion string; a no-op patch changes nothing", async () => {
    const w = fresh("Deployment", { "x.io/a": "1" });
    const before = w.get();
    const same = await patch(sim, w.path, MERGE, { metadata: { annotations: { "x.io/a": "1" } } });
    expect(same.status).toBe(200);
    expect(same.json.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(w.get()).toEqual(before);
    const changed = await patch(sim, w.path, MERGE, { metadata: { annotations: { "x.io/a": "2" } } });
    expect(typeof changed.json.metadata.resourceVersion).toBe("string");
    expect(Number(changed.json.metadata.resourceVersion)).toBeGreaterThan(
      Number(before.metadata.resourceVersion),
    );
  });

  test("writes through the main resource never change status", async () => {
    const w = fresh();
    const before = w.get();
    const r = await patch(sim, w.path, MERGE, {
      status: { replicas: 42, observedGeneration: 99 },
      metadata: { annotations: { a: "b" } },
    });
    expect(r.json.status).toEqual(before.status);
  });

  test("an empty image is a 422 Invalid naming the field", async () => {
    const w = fresh();
    const r = await patch(sim, w.path, SMP, {
      spec: { template: { spec: { containers: [{ name: "app", image: "" }] } } },
    });
    expect(r.status).toBe(422);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `Deployment.apps "${w.name}" is invalid: spec.template.spec.containers[0].image: Required value`,
      reason: "Invalid",
      details: {
        name: w.name,
        group: "apps",
        kind: "Deployment",
        causes: [
          {
            reason: "FieldValueRequired",
            message: "Required value",
            field: "spec.template.spec.containers[0].image",
          },
        ],
      },
      code: 422,
    });
  });

  test("PATCH of a missing object is NotFound", async () => {
    const r = await patch(sim, objectPath("StatefulSet", "apps", "ghost"), MERGE, {});
    expect(r.json).toMatchObject({
      code: 404,
      reason: "NotFound",
      message: 'statefulsets.apps "ghost" not found',
    });
  });
});

describe("generation rules per kind", () => {
  const annotate = { metadata: { annotations: { "image-refresh.io/refresh-attempt": "1" } } };
  const template = {
    spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": "t" } } } },
  };
  const cases: Array<[WorkloadKind, string, unknown, number]> = [
    ["Deployment", "annotation", annotate, 2],
    ["Deployment", "template", template, 2],
    ["DaemonSet", "annotation", annotate, 1],
    ["DaemonSet", "template", template, 2],
    ["StatefulSet", "annotation", annotate, 1],
    ["StatefulSet", "template", template, 2],
  ];
  for (const [kind, what, body, generation] of cases) {
    test(`${kind}: a ${what} change → generation ${generation}`, async () => {
      const w = fresh(kind);
      const r = await patch(sim, w.path, MERGE, body);
      expect(r.json.metadata.generation).toBe(generation);
      if (kind === "DaemonSet") {
        expect(r.json.metadata.annotations["deprecated.daemonset.template.generation"]).toBe(
          what === "template" ? "2" : "1",
        );
      }
    });
  }

  test("setAnnotations writes like another actor: RV and (Deployment) generation bump", () => {
    const d = fresh("Deployment");
    const s = fresh("StatefulSet");
    const rvBefore = d.get().metadata.resourceVersion;
    sim.setAnnotations("Deployment", "apps", d.name, { "x.io/a": "1" });
    sim.setAnnotations("StatefulSet", "apps", s.name, { "x.io/a": "1" });
    expect(d.get().metadata.resourceVersion).not.toBe(rvBefore);
    expect(d.get().metadata.generation).toBe(2);
    expect(s.get().metadata.generation).toBe(1);
    sim.setAnnotations("Deployment", "apps", d.name, { "x.io/a": null });
    expect(d.get().metadata.annotations["x.io/a"]).toBeUndefined();
  });
});
