// The kustomize base as it ships, on a real node: k8s/base through an overlay that sets only the
// image and the config (as docs/install-kustomize.md has a user write one), rendered by the real
// kubectl's kustomize and applied whole: its own Namespace (Pod Security `restricted`), its
// ServiceAccount and Roles, its CronJob. The config is the base's own config.yaml (Deployment
// default/app following myorg/app, the workload its Roles name) pointed at the node's registry
// with short waits. Ticks are Jobs made from the CronJob; the story is the first observation,
// then a new build pushed and rolled out to real pods, pinned by digest and verified.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type K8sObject, parseManifests } from "../../../lib/manifests.ts";
import { ok } from "../kubectl.ts";
import { list } from "../manifests.ts";
import { K8S } from "../overlay.ts";
import { type NodeCluster, startNodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";
import { needNode } from "./gate.ts";
import { type Base, installBase, type JobView, manual, RELEASE_NS, type Tick } from "./product.ts";
import { serverDeployment } from "./workloads.ts";

const missing = needNode("tests/real/node/kustomize.real.test.ts");
// The base's config.yaml: its one image, its one target, the namespace its Role is in.
const BASE_CONFIG = Bun.YAML.parse(readFileSync(join(K8S, "base", "config.yaml"), "utf8")) as {
  images: Array<{ repository: string }>;
};
const REPO = BASE_CONFIG.images[0]?.repository as string;
const NS = "default";
const TAG = `${REGISTRY_HOST}/${REPO}:stable`;

/** The tick's own words when it did not end as expected. */
const said = (t: Tick) => [t.exitCode, t.condition, t.outcome, t.exitCode === 0 ? errors(t) : t.log];
const errors = (t: Tick) =>
  t.lines
    .filter((l) => l.level === "error")
    .map((l) => String(l.msg))
    .join("\n");

// biome-ignore lint/suspicious/noExplicitAny: rendered objects are free-form JSON
type Obj = any;

/** The objects with the image and the config taken out: what the overlay may not change. */
function withoutImageAndConfig(objects: K8sObject[]): Obj[] {
  return objects.map((o: Obj) => {
    if (o.kind === "ConfigMap" && o.metadata.name.startsWith("image-refresh-config-"))
      return { ...o, metadata: { ...o.metadata, name: "CONFIG" }, data: "CONFIG" };
    if (o.kind !== "CronJob") return o;
    const job = structuredClone(o);
    const pod = job.spec.jobTemplate.spec.template.spec;
    pod.containers[0].image = "IMAGE";
    for (const v of pod.volumes) if (v.name === "config") v.configMap.name = "CONFIG";
    return job;
  });
}

describe.skipIf(missing)(
  "the kustomize base, unchanged but for the image and the config, on a real node",
  () => {
    let c: NodeCluster;
    let b: Base;
    let config: Obj;
    beforeAll(async () => {
      c = await startNodeCluster();
      await c.images.server(REPO, "stable", { mode: "ready" });
      await ok(
        c.kubectl(["apply", "-f", "-"], { stdin: list([serverDeployment(NS, "app", TAG, 2)]) }),
        "app",
      );
      const registry = { host: REGISTRY_HOST, endpoint: `http://${REGISTRY_HOST}`, insecure: true };
      config = { ...BASE_CONFIG, registry, rolloutTimeout: "60s", requestTimeout: "10s", verifyFor: "5s" };
      b = await installBase(c, config);
      await ok(c.kubectl(["rollout", "status", "deployment/app", "-n", NS, "--timeout=90s"]), "app");
    }, 300_000);
    afterAll(async () => {
      await c?.stop();
    });

    async function app(): Promise<Obj> {
      return await c.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/app`);
    }

    test("the overlay renders the base with only the image and the config changed", async () => {
      const base = parseManifests(await ok(c.kubectl(["kustomize", join(K8S, "base")]), "kustomize base"));
      const mine = parseManifests(b.rendered);
      expect(withoutImageAndConfig(mine)).toEqual(withoutImageAndConfig(base));
      const job: Obj = mine.find((o) => o.kind === "CronJob");
      expect(job.spec.jobTemplate.spec.template.spec.containers[0].image).toBe(
        `${REGISTRY_HOST}/image-refresh:node-tier`,
      );
      const cm: Obj = mine.find((o) => o.kind === "ConfigMap");
      expect(Bun.YAML.parse(cm.data["config.yaml"])).toEqual(config);
    });

    test("the base's Namespace enforces Pod Security restricted: a bare pod is refused", async () => {
      const ns = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}`);
      expect(ns.metadata.labels["pod-security.kubernetes.io/enforce"]).toBe("restricted");
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

    test("first observation, then a new build pushed: the next tick pins it by digest and verifies its rollout on real pods", async () => {
      const before = await app();
      const recorded = await b.tick();
      expect(said(recorded)).toEqual([0, "Complete", "recorded", ""]);
      // Observed, not touched: the workload is still on the tag, the same generation.
      const seen = await app();
      expect([seen.spec.template.spec.containers[0].image, seen.metadata.generation]).toEqual([
        TAG,
        before.metadata.generation,
      ]);

      const build = await c.images.server(REPO, "stable", { mode: "ready" });
      const refresh = await b.tick();
      expect(said(refresh)).toEqual([0, "Complete", "refreshed", ""]);
      expect(refresh.log).toContain(`verifying Deployment ${NS}/app`);
      const d = await app();
      expect(d.spec.template.spec.containers[0].image).toBe(`${REGISTRY_HOST}/${REPO}@${build}`);
      // The tick waited for the rollout: the real pods already run the pinned build, all Ready.
      expect([d.status.observedGeneration, d.status.updatedReplicas, d.status.readyReplicas]).toEqual([
        d.metadata.generation,
        2,
        2,
      ]);
      const pods = await c.admin.get(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3Dapp`);
      const live = pods.items.filter((x: Obj) => !x.metadata.deletionTimestamp);
      const on = (x: Obj) => [x.status.containerStatuses[0].ready, x.status.containerStatuses[0].imageID];
      expect(live.map(on)).toEqual([
        [true, expect.stringContaining(build)],
        [true, expect.stringContaining(build)],
      ]);
      const store = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/configmaps/image-refresh-state`);
      expect(store.data["last-refreshed-app-digest"]).toBe(build);
      // Every Job was one of the test's: the suspended schedule made none.
      const jobs = await c.admin.get(`/apis/batch/v1/namespaces/${RELEASE_NS}/jobs`);
      expect(jobs.items.map((j: JobView) => [j.metadata.name, manual(j)])).toEqual([
        [recorded.job, true],
        [refresh.job, true],
      ]);
      console.log(`kustomize base: ticks as Jobs took ${recorded.ms} ms, ${refresh.ms} ms`);
    }, 600_000);
  },
);
