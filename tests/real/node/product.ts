// The product as it ships, on the real node: its image built as CI builds it and pulled by the
// kubelet, the chart installed by the real Helm with only the image and the config set, in a
// namespace that enforces Pod Security `restricted`. A tick is a Job made from the CronJob
// (`kubectl create job --from=cronjob/...`) or one the CronJob made itself; its exit code is
// read from the Job's pod, its log from the kubelet through `kubectl logs`.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHART } from "../chart/helm.ts";
import { helm, ok } from "../kubectl.ts";
import type { NodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";

export const RELEASE_NS = "image-refresh";
const CRONJOB = "image-refresh";

type Obj = Record<string, unknown>;

export interface Tick {
  job: string;
  pod: string;
  /** The container's exit code, from the pod's status. */
  exitCode: number;
  /** The Job's final condition: Complete or Failed. */
  condition: string;
  log: string;
  lines: Array<Record<string, unknown>>;
  outcome?: string;
  /** When the Job was created and when its pod's container ended. */
  ms: number;
}

export interface Product {
  /** The image's pushed digest. */
  digest: string;
  /** A tick as a Job made from the CronJob now. */
  tick(): Promise<Tick>;
  /** Another command (status, rearm, reject ...) as a Job from the CronJob's template with these args. */
  command(args: string[]): Promise<Tick>;
  /** Waits for the next Job the CronJob makes itself (at most `ms`), and its end. */
  scheduled(ms: number): Promise<Tick>;
  /** helm upgrade with these values merged over the installed ones. */
  upgrade(values: Obj): Promise<void>;
}

/** The product's config for `images` (repositories in the registry, each with its targets). */
export function productConfig(images: Obj[], extra: Obj = {}): Obj {
  return {
    tag: "stable",
    registry: { host: REGISTRY_HOST, endpoint: `http://${REGISTRY_HOST}`, insecure: true },
    rolloutTimeout: "60s",
    requestTimeout: "10s",
    images,
    ...extra,
  };
}

function restrictedNamespace(name: string): Obj {
  const labels = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
  };
  return { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } };
}

export async function installProduct(c: NodeCluster, config: Obj): Promise<Product> {
  const digest = await c.images.product("image-refresh", "node-tier");
  await ok(
    c.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(restrictedNamespace(RELEASE_NS)) }),
    "namespace",
  );
  const h = helm(4, c.adminKubeconfig, c.dir);
  const valuesFile = (v: Obj) => {
    const f = join(c.dir, `values-${Date.now()}.json`);
    writeFileSync(f, JSON.stringify(v));
    return f;
  };
  const values = {
    image: { repository: `${REGISTRY_HOST}/image-refresh`, tag: "node-tier", pullPolicy: "IfNotPresent" },
    // The tests make each tick's Job themselves; one test turns the schedule on.
    suspend: true,
    config,
  };
  await ok(
    h(["install", "image-refresh", CHART, "-n", RELEASE_NS, "-f", valuesFile(values)]),
    "helm install",
  );
  let jobs = 0;
  return {
    digest,
    async tick() {
      const job = `tick-${++jobs}-${Date.now() % 100000}`;
      const t0 = Date.now();
      await ok(
        c.kubectl(["create", "job", `--from=cronjob/${CRONJOB}`, job, "-n", RELEASE_NS]),
        "create job",
      );
      return await finished(c, job, t0);
    },
    async command(args) {
      const job = `cmd-${++jobs}-${Date.now() % 100000}`;
      const t0 = Date.now();
      const made = await ok(
        c.kubectl([
          "create",
          "job",
          `--from=cronjob/${CRONJOB}`,
          job,
          "-n",
          RELEASE_NS,
          "--dry-run=client",
          "-o",
          "json",
        ]),
        "render job",
      );
      const manifest = JSON.parse(made);
      manifest.spec.template.spec.containers[0].args = args;
      await ok(c.kubectl(["create", "-f", "-"], { stdin: JSON.stringify(manifest) }), "create job");
      return await finished(c, job, t0);
    },
    async scheduled(ms) {
      const t0 = Date.now();
      let job: string | undefined;
      while (!job && Date.now() - t0 < ms) {
        const list = await c.admin.get(`/apis/batch/v1/namespaces/${RELEASE_NS}/jobs`);
        const own = list.items.find(
          (j: JobView) => j.metadata.annotations?.["cronjob.kubernetes.io/instantiate"] !== "manual",
        );
        job = own?.metadata.name;
        if (!job) await Bun.sleep(1000);
      }
      if (!job) throw new Error(`The CronJob made no Job within ${ms} ms`);
      return await finished(c, job, t0);
    },
    async upgrade(v) {
      const f = valuesFile(v);
      await ok(
        h(["upgrade", "image-refresh", CHART, "-n", RELEASE_NS, "--reuse-values", "-f", f]),
        "helm upgrade",
      );
    },
  };
}

interface JobView {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

const endOf = (j: JobView): string | undefined =>
  j.status?.conditions?.find((x) => (x.type === "Complete" || x.type === "Failed") && x.status === "True")
    ?.type;

/** Waits for Job `job` (created at `t0`) to end, and reads its pod's exit code and log. */
export async function finished(c: NodeCluster, job: string, t0: number): Promise<Tick> {
  let condition: string | undefined;
  while (!condition) {
    if (Date.now() - t0 > 300_000) throw new Error(`Job ${job} did not finish in 300 s`);
    condition = endOf(await c.admin.get(`/apis/batch/v1/namespaces/${RELEASE_NS}/jobs/${job}`));
    if (!condition) await Bun.sleep(500);
  }
  const pods = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/pods?labelSelector=job-name%3D${job}`);
  const pod = pods.items[0];
  if (!pod) throw new Error(`Job ${job} ended ${condition} with no pod`);
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  const log = await ok(c.kubectl(["logs", pod.metadata.name, "-n", RELEASE_NS]), "kubectl logs");
  const lines = log
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const last = lines.findLast((l) => l.outcome !== undefined);
  return {
    job,
    pod: pod.metadata.name,
    exitCode: terminated?.exitCode ?? -1,
    condition,
    log,
    lines,
    ...(last ? { outcome: String(last.outcome) } : {}),
    ms: Date.now() - t0,
  };
}

export interface SeenEvent {
  type: string;
  reason: string;
  about: string;
}

/** The Events the product posted, from the events.k8s.io API. */
export async function productEvents(c: NodeCluster): Promise<SeenEvent[]> {
  const held = await c.admin.get("/apis/events.k8s.io/v1/events");
  return (
    held.items
      // biome-ignore lint/suspicious/noExplicitAny: Events read loosely
      .filter((e: any) => e.reportingController === "image-refresh.io/image-refresh")
      // biome-ignore lint/suspicious/noExplicitAny: as above
      .map((e: any) => ({
        type: e.type,
        reason: e.reason,
        about: `${e.metadata.namespace} ${e.regarding?.kind}/${e.regarding?.name}`,
      }))
  );
}
