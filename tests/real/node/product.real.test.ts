// The product as it ships, on a real node: its own image as the chart's CronJob, under Pod
// Security `restricted`, reaching the API server in-cluster (the `kubernetes` Service through
// kube-proxy, its projected token, kube-root-ca.crt) and rolling a good build out to real pods.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ok } from "../kubectl.ts";
import { list, namespace } from "../manifests.ts";
import { type NodeCluster, startNodeCluster } from "./cluster.ts";
import { POD_CIDR, REGISTRY_HOST } from "./configs.ts";
import { needNode } from "./gate.ts";
import {
  installProduct,
  type Product,
  productConfig,
  productEvents,
  RELEASE_NS,
  type Tick,
} from "./product.ts";
import { serverDeployment } from "./workloads.ts";

const missing = needNode("tests/real/node/product.real.test.ts", ["helm4"]);
const APPS = "apps";
const REPO = `${APPS}/web`;
const TAG = `${REGISTRY_HOST}/${REPO}:stable`;
const SA_USER = `system:serviceaccount:${RELEASE_NS}:image-refresh`;

/** The tick's own words when it did not end as expected. */
const said = (t: Tick) => [t.exitCode, t.condition, t.outcome, t.exitCode === 0 ? errors(t) : t.log];
const errors = (t: Tick) =>
  t.lines
    .filter((l) => l.level === "error")
    .map((l) => String(l.msg))
    .join("\n");

describe.skipIf(missing)("the product's image as the chart's CronJob on a real node", () => {
  let c: NodeCluster;
  let p: Product;
  beforeAll(async () => {
    c = await startNodeCluster();
    await c.images.server(REPO, "stable", { mode: "ready" });
    const web = serverDeployment(APPS, "web", TAG, 2);
    await ok(c.kubectl(["apply", "-f", "-"], { stdin: list([namespace(APPS), web]) }), "apply web");
    const targets = [{ kind: "Deployment", namespace: APPS, name: "web", container: "web" }];
    p = await installProduct(c, productConfig([{ repository: REPO, targets }], { namespace: APPS }));
    await ok(c.kubectl(["rollout", "status", "deployment/web", "-n", APPS, "--timeout=90s"]), "web");
  }, 300_000);
  afterAll(async () => {
    await c?.stop();
  });

  /** The pods of web's current ReplicaSet: Ready, and the digest each container runs. */
  async function webPods(): Promise<Array<{ ready: boolean; imageID: string }>> {
    const d = await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/web`);
    const hash = (
      await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/replicasets?labelSelector=app%3Dweb`)
    ).items.find(
      // biome-ignore lint/suspicious/noExplicitAny: ReplicaSets read loosely
      (rs: any) =>
        rs.metadata.annotations?.["deployment.kubernetes.io/revision"] ===
        d.metadata.annotations?.["deployment.kubernetes.io/revision"],
    )?.metadata.labels["pod-template-hash"];
    const pods = await c.admin.get(
      `/api/v1/namespaces/${APPS}/pods?labelSelector=pod-template-hash%3D${hash}`,
    );
    // biome-ignore lint/suspicious/noExplicitAny: pods read loosely
    return pods.items.map((x: any) => ({
      ready: x.status?.containerStatuses?.[0]?.ready === true,
      imageID: x.status?.containerStatuses?.[0]?.imageID ?? "",
    }));
  }

  test("the release namespace enforces Pod Security restricted: a bare pod is refused", async () => {
    const bare = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "bare" },
      spec: { containers: [{ name: "x", image: TAG }] },
    };
    const r = await c.admin.request("POST", `/api/v1/namespaces/${RELEASE_NS}/pods`, { body: bare });
    expect([r.status, String(r.body?.message)]).toEqual([
      403,
      expect.stringContaining('violates PodSecurity "restricted:latest"'),
    ]);
  });

  test("story 1: first observation, adoption, then a good build pushed to the tag rolled out by an in-cluster tick", async () => {
    const first = await p.tick();
    expect(said(first)).toEqual([0, "Complete", "recorded", ""]);
    const adopt = await p.tick();
    expect(said(adopt)).toEqual([0, "Complete", "refreshed", ""]);
    const pinned = await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/web`);
    expect(pinned.spec.template.spec.containers[0].image).toStartWith(`${REGISTRY_HOST}/${REPO}@sha256:`);

    const build = await c.images.server(REPO, "stable", { mode: "ready" });
    const refresh = await p.tick();
    expect(said(refresh)).toEqual([0, "Complete", "refreshed", ""]);
    const d = await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/web`);
    expect(d.spec.template.spec.containers[0].image).toBe(`${REGISTRY_HOST}/${REPO}@${build}`);
    // The tick waited for the rollout: the real pods already run the pinned build, all Ready.
    const pods = await webPods();
    expect(pods.length).toBe(2);
    for (const pod of pods) expect(pod).toEqual({ ready: true, imageID: expect.stringContaining(build) });
    const store = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/configmaps/image-refresh-state`);
    expect(store.data["last-refreshed-web-digest"]).toBe(build);
    const events = await productEvents(c);
    expect(events).toContainEqual({ type: "Normal", reason: "Refreshed", about: `${APPS} Deployment/web` });
    // Another command of the same image as a Job: status reads what the ticks left.
    const status = await p.command(["status"]);
    expect([status.exitCode, status.condition]).toEqual([0, "Complete"]);
    expect(status.log).toContain(`recorded: ${build}`);
    console.log(
      `node tier: ticks as Jobs took ${[first, adopt, refresh].map((t) => `${t.ms} ms`).join(", ")}`,
    );
  }, 600_000);

  test("the ticks ran in-cluster: the ServiceAccount's bound token, from a pod address, through the kubernetes Service", () => {
    const audit = readFileSync(join(c.dir, "audit.log"), "utf8")
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l))
      .filter((e) => e.user?.username === SA_USER && e.stage === "ResponseComplete");
    const prefix = POD_CIDR.split(".").slice(0, 3).join(".");
    // A projected token names the pod it was bound to; a pod address means kube-proxy's DNAT.
    const seen = audit.map((e) => ({
      pod: String(e.user.extra?.["authentication.kubernetes.io/pod-name"]?.[0]).replace(/-[a-z0-9]{5}$/, ""),
      fromPod: String(e.sourceIPs[0]).startsWith(`${prefix}.`),
      refused: [401, 403].includes(e.responseStatus.code),
    }));
    // Three ticks and the status Job of story 1, each its own pod.
    const pods = [...new Set(seen.map((x) => x.pod))];
    expect([pods.map((x) => x.split("-")[0]).sort(), pods]).toEqual([["cmd", "tick", "tick", "tick"], pods]);
    for (const x of seen)
      expect(x).toEqual({ pod: expect.stringMatching(/^(tick|cmd)-/), fromPod: true, refused: false });
  });

  test("story 2: the CronJob fires by itself on its schedule", async () => {
    await p.upgrade({ suspend: false, schedule: "* * * * *" });
    const t = await p.scheduled(150_000);
    await p.upgrade({ suspend: true });
    // Nothing new was pushed since story 1: the tick finds the workload on the newest build.
    expect(said(t)).toEqual([0, "Complete", "noop", ""]);
  }, 300_000);
});
