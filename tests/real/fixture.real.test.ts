// The fixture itself, against the real control plane: the version it was built at, a Ready
// untainted Node, a ServiceAccount token the real authenticator accepts, and the fake kubelet
// making a Deployment, a DaemonSet and a Job do what the real controllers need, as the real
// kubectl judges them. Every other real-tier file relies on these.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Cluster, startCluster } from "./cluster.ts";
import { helm, stderrProblems } from "./kubectl.ts";
import { daemonSet, deployment, job, namespace } from "./manifests.ts";
import { needPeers } from "./peers.ts";

const missing = needPeers(["kube"], "tests/real/fixture.real.test.ts");
const DIGEST = (c: string) => `sha256:${c.repeat(64)}`;

describe.skipIf(missing)("the real control plane fixture", () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster();
  }, 180_000);
  afterAll(async () => {
    await c?.stop();
  });

  test("kube-apiserver reports the pinned version and the Node is Ready without taints", async () => {
    const v = await c.cp.admin.get("/version");
    expect(v.gitVersion).toBe("v1.36.3");
    const node = await c.cp.admin.get("/api/v1/nodes/node-1");
    expect(node.spec.taints ?? []).toEqual([]);
    expect(node.status.conditions.find((x: { type: string }) => x.type === "Ready").status).toBe("True");
  });

  test("a ServiceAccount token from kubectl create token authenticates as that ServiceAccount", async () => {
    await c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(namespace("fixture")) });
    const r0 = await c.kubectl(["create", "serviceaccount", "robot", "-n", "fixture"]);
    expect(r0.code).toBe(0);
    const sa = await c.serviceAccount("fixture", "robot");
    const who = await c.kubectl([
      "--kubeconfig",
      sa.kubeconfig,
      "auth",
      "whoami",
      "-o",
      "jsonpath={.status.userInfo.username}",
    ]);
    expect(who.out).toBe(sa.user);
    // And RBAC is on: the ServiceAccount may not list pods.
    const denied = await c.kubectl(["--kubeconfig", sa.kubeconfig, "get", "pods", "-n", "fixture"]);
    expect(denied.code).toBe(1);
    expect(denied.err).toContain(`User "${sa.user}" cannot list resource "pods"`);
  }, 60_000);

  test("healthy builds roll out; a build that is never Ready does not", async () => {
    c.kubelet.build(DIGEST("b"), "never");
    const objects = [
      deployment("fixture", "web", { image: `example.test/web@${DIGEST("a")}`, replicas: 2 }),
      daemonSet("fixture", "agent", { image: `example.test/agent@${DIGEST("a")}` }),
      job("fixture", "once", { image: `example.test/once@${DIGEST("a")}` }),
    ];
    await c.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
    });
    for (const w of ["deployment/web", "daemonset/agent"]) {
      const r = await c.kubectl(["rollout", "status", w, "-n", "fixture", "--timeout=60s"]);
      expect(r.code, r.err).toBe(0);
    }
    const done = await c.kubectl([
      "wait",
      "--for=condition=Complete",
      "job/once",
      "-n",
      "fixture",
      "--timeout=60s",
    ]);
    expect(done.code, done.err).toBe(0);
    await c.kubectl([
      "set",
      "image",
      "deployment/web",
      `web=example.test/web@${DIGEST("b")}`,
      "-n",
      "fixture",
    ]);
    const stuck = await c.kubectl(["rollout", "status", "deployment/web", "-n", "fixture", "--timeout=5s"]);
    expect(stuck.code).toBe(1);
    expect(stuck.out).toContain("1 out of 2 new replicas have been updated");
  }, 120_000);

  test("a flapping build's pod goes Ready and not Ready in turn, its restartCount growing; a slow one is Ready late", async () => {
    c.kubelet.build(DIGEST("f"), "flapping");
    c.kubelet.build(DIGEST("5"), "slow");
    const items = [
      deployment("fixture", "flappy", { image: `example.test/flappy@${DIGEST("f")}` }),
      deployment("fixture", "slowpoke", { image: `example.test/slowpoke@${DIGEST("5")}` }),
    ];
    await c.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({ apiVersion: "v1", kind: "List", items }),
    });
    const seen = { flappy: new Set<string>(), slowpoke: new Set<string>() };
    let restarts = 0;
    const started = Date.now();
    let slowReadyAt = 0;
    while (Date.now() - started < 8000) {
      for (const app of ["flappy", "slowpoke"] as const) {
        const pods = (await c.cp.admin.get(`/api/v1/namespaces/fixture/pods?labelSelector=app%3D${app}`))
          .items;
        for (const p of pods) {
          const ready = p.status?.conditions?.find((x: { type: string }) => x.type === "Ready")?.status;
          if (ready) seen[app].add(ready);
          if (app === "flappy")
            restarts = Math.max(restarts, p.status?.containerStatuses?.[0]?.restartCount ?? 0);
          if (app === "slowpoke" && ready === "True" && !slowReadyAt) slowReadyAt = Date.now() - started;
        }
      }
      await Bun.sleep(100);
    }
    expect([...seen.flappy].sort()).toEqual(["False", "True"]);
    expect(restarts).toBeGreaterThan(0);
    expect(slowReadyAt).toBeGreaterThan(3000);
  }, 60_000);
});

const noHelm = needPeers(["kube", "helm3", "helm4"], "tests/real/fixture.real.test.ts");

describe.skipIf(noHelm)("the built helm v3 and v4 against the real control plane", () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster();
    await c.kubectl(["create", "namespace", "charts"]);
  }, 180_000);
  afterAll(async () => {
    await c?.stop();
  });

  for (const major of [3, 4] as const) {
    test(`helm ${major} installs a chart; its field manager is recorded`, async () => {
      const chart = join(c.cp.dir, `chart${major}`);
      mkdirSync(join(chart, "templates"), { recursive: true });
      writeFileSync(join(chart, "Chart.yaml"), `apiVersion: v2\nname: web${major}\nversion: 0.1.0\n`);
      const d = deployment("charts", `web${major}`, { image: "{{ .Values.image }}" });
      writeFileSync(join(chart, "templates", "deployment.yaml"), JSON.stringify(d));
      const h = helm(major, c.cp.adminKubeconfig, c.cp.dir);
      const image = `example.test/web@${DIGEST("c")}`;
      const r = await h([
        "install",
        `web${major}`,
        chart,
        "-n",
        "charts",
        "--set",
        `image=${image}`,
        "--wait",
        "--timeout=60s",
      ]);
      expect(stderrProblems(r.err)).toEqual([]);
      expect(r.code).toBe(0);
      const w = await c.cp.admin.get(`/apis/apps/v1/namespaces/charts/deployments/web${major}`);
      expect(w.spec.template.spec.containers[0].image).toBe(image);
      const managers = w.metadata.managedFields.map(
        (f: { manager: string; operation: string }) => `${f.manager} ${f.operation}`,
      );
      expect(managers).toContain(major === 3 ? "helm Update" : "helm Apply");
    }, 120_000);
  }
});
