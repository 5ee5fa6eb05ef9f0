// The simulated API server's transport, auth, reads, error shapes, fault injection and log.
import { describe, expect, test } from "bun:test";
import { call, objectPath, patch } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";
import { seededServer } from "./apiserver-harness.ts";

const { sim, fresh } = await seededServer();
const dep = objectPath("Deployment", "apps", "api");

describe("transport and lifecycle", () => {
  test("listens on 127.0.0.1 over HTTPS with the generated CA", async () => {
    expect(sim.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await call(sim, "/version")).json.major).toBe("1");
    await expect(fetch(`${sim.url}/version`)).rejects.toThrow();
  });

  test("stop() closes hanging requests and open watches, and is idempotent", async () => {
    const s = await startApiServer();
    s.addWorkload({
      kind: "Deployment",
      namespace: "a",
      name: "w",
      containers: [{ name: "c", image: "i:1" }],
    });
    s.faults.add({ path: "/version", fault: { type: "hang" } });
    const hanging = call(s, "/version").catch((e: Error) => e);
    const watching = call(s, `${objectPath("Deployment", "a")}?watch=1`).catch((e: Error) => e);
    await Bun.sleep(50);
    // stop() ends a hanging request and an open watch instead of waiting for them (a test's
    // servers must stop by themselves); it is idempotent.
    await s.stop();
    await s.stop();
    expect(await hanging).toBeInstanceOf(Error);
    const w = await watching;
    expect(w instanceof Error || w.status === 200).toBe(true);
  });
});

describe("authentication", () => {
  test("a missing or wrong bearer token is a 401 Status", async () => {
    for (const token of [null, "wrong"]) {
      const r = await call(sim, dep, { token });
      expect(r.status).toBe(401);
      expect(r.json).toEqual({
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
    }
  });

  test("rotateToken makes the old token 401 and the new one work", async () => {
    const s = await fresh({ token: "first" });
    expect((await call(s, "/version")).status).toBe(200);
    s.rotateToken("second");
    expect((await call(s, "/version", { token: "first" })).status).toBe(401);
    expect((await call(s, "/version", { token: "second" })).status).toBe(200);
    expect(s.token).toBe("second");
  });
});

describe("reads", () => {
  test("GET returns the defaulted object with a string resourceVersion", async () => {
    const r = await call(sim, dep);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      kind: "Deployment",
      apiVersion: "apps/v1",
      metadata: { name: "api", namespace: "apps", generation: 1 },
    });
    expect(typeof r.json.metadata.resourceVersion).toBe("string");
    expect(r.json.spec).toMatchObject({
      replicas: 3,
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } },
    });
    expect(r.json.status).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      availableReplicas: 3,
    });
    expect(r.json.status.unavailableReplicas).toBeUndefined(); // omitempty zero
  });

  test("DaemonSet and StatefulSet defaults match the real server", async () => {
    const ds = (await call(sim, objectPath("DaemonSet", "agents", "agent"))).json;
    expect(ds.spec.updateStrategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    expect(ds.metadata.annotations["deprecated.daemonset.template.generation"]).toBe("1");
    expect(ds.status).toMatchObject({
      currentNumberScheduled: 3,
      numberMisscheduled: 0,
      desiredNumberScheduled: 3,
      numberReady: 3,
    });
    expect(ds.status.numberUnavailable).toBeUndefined();
    const sts = (await call(sim, objectPath("StatefulSet", "apps", "db"))).json;
    expect(sts.spec).toMatchObject({
      replicas: 1,
      podManagementPolicy: "OrderedReady",
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
    });
    expect(sts.status).toMatchObject({ replicas: 1, availableReplicas: 1, collisionCount: 0 });
    expect(sts.status.currentRevision).toBe(sts.status.updateRevision);
  });

  test("LIST with fieldSelector=metadata.name returns a typed list with a resourceVersion", async () => {
    const r = await call(sim, `${objectPath("Deployment", "apps")}?fieldSelector=metadata.name%3Dapi`);
    expect(r.json.kind).toBe("DeploymentList");
    expect(r.json.metadata.resourceVersion).toBe(sim.resourceVersion);
    expect(r.json.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["api"]);
    const none = await call(sim, `${objectPath("Deployment", "apps")}?fieldSelector=metadata.name%3Dnope`);
    expect(none.json.items).toEqual([]);
    const bad = await call(sim, `${objectPath("Deployment", "apps")}?fieldSelector=spec.replicas%3D1`);
    expect(bad.status).toBe(400);
    expect(bad.json.message).toBe("field label not supported: spec.replicas");
  });
});

describe("error shapes (apimachinery pkg/api/errors/errors.go)", () => {
  const cases: Array<{ name: string; run: () => Promise<{ status: number; json: unknown }>; body: unknown }> =
    [
      {
        name: "NotFound names the plural resource and group",
        run: () => call(sim, objectPath("Deployment", "apps", "nope")),
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: 'deployments.apps "nope" not found',
          reason: "NotFound",
          details: { name: "nope", group: "apps", kind: "deployments" },
          code: 404,
        },
      },
      {
        name: "an unknown path is the generic NotFound",
        run: () => call(sim, "/apis/batch/v1/namespaces/apps/jobs"),
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: "the server could not find the requested resource",
          reason: "NotFound",
          details: {},
          code: 404,
        },
      },
      {
        name: "an unsupported method is MethodNotAllowed",
        run: () => call(sim, dep, { method: "DELETE" }),
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: "the server does not allow this method on the requested resource",
          reason: "MethodNotAllowed",
          details: {},
          code: 405,
        },
      },
      {
        name: "an unknown patch content type is UnsupportedMediaType",
        run: () => patch(sim, dep, "application/json", {}),
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message:
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json",
          reason: "UnsupportedMediaType",
          details: {},
          code: 415,
        },
      },
    ];
  for (const c of cases) {
    test(c.name, async () => {
      const r = await c.run();
      expect(r.json).toEqual(c.body);
      expect(r.status).toBe((c.body as { code: number }).code);
    });
  }
});

describe("helpers", () => {
  test("kubeconfig names the server, CA data, token and namespace", () => {
    const kc = sim.kubeconfig({ namespace: "apps" });
    expect(kc).toContain(`server: ${sim.url}`);
    expect(kc).toContain(`certificate-authority-data: ${Buffer.from(sim.caPem).toString("base64")}`);
    expect(kc).toContain(`token: "${sim.token}"`);
    expect(kc).toContain('namespace: "apps"');
    expect(sim.kubeconfig({ insecure: true, token: "t" })).toContain("insecure-skip-tls-verify: true");
  });

  test("getObject is a deep copy; unknown objects are undefined", () => {
    const a = sim.getObject("Deployment", "apps", "api");
    a.spec.replicas = 99;
    expect(sim.getObject("Deployment", "apps", "api").spec.replicas).toBe(3);
    expect(sim.getObject("Deployment", "apps", "none")).toBeUndefined();
  });

  test("discovery documents for kubectl", async () => {
    expect((await call(sim, "/api")).json).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const groups = (await call(sim, "/apis")).json.groups.map((g: { name: string }) => g.name);
    expect(groups).toEqual(["apps", "events.k8s.io"]);
    const apps = (await call(sim, "/apis/apps/v1")).json.resources.map((r: { name: string }) => r.name);
    expect(apps).toContain("deployments");
    expect(apps).toContain("statefulsets/status");
  });
});
