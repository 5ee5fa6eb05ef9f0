// The fixture itself, against the real control plane: the version it was built at, a Ready
// untainted Node, a ServiceAccount token the real authenticator accepts, and the fake kubelet
// making a Deployment, a DaemonSet and a Job do what the real controllers need, as the real
// kubectl judges them. Every other real-tier file relies on these.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Cluster, startCluster } from "./cluster.ts";
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
});
