// The product as it ships, on the real node: its image built as CI builds it and pulled by the
// kubelet, installed with only the image and the config set, in a namespace that enforces Pod
// Security `restricted`: the chart by the real Helm, or the kustomize base (k8s/base) through an
// overlay as docs/install-kustomize.md has a user write one. Both make the same CronJob
// image-refresh in namespace image-refresh. A tick is a Job made from it (`kubectl create job
// --from=cronjob/...`) or one the CronJob made itself; its exit code is read from the Job's pod,
// its log from the kubelet through `kubectl logs`.
import { mkdtempSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { CHART } from "../chart/helm.ts";
import { helm, ok } from "../kubectl.ts";
import { K8S } from "../overlay.ts";
import type { NodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";

export const RELEASE_NS = "image-refresh";
const CRONJOB = "image-refresh";
const IMAGE_REPOSITORY = `${REGISTRY_HOST}/image-refresh`;
const IMAGE_TAG = "node-tier";

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

/** What runs as a Job of the CronJob image-refresh, however it was installed. */
export interface CronJobRuns {
  /** A tick as a Job made from the CronJob now. */
  tick(): Promise<Tick>;
  /** Another command (status, rearm, reject ...) as a Job from the CronJob's template with these args. */
  command(args: string[]): Promise<Tick>;
  /** Waits for the next Job the CronJob makes itself (at most `ms`), and its end. */
  scheduled(ms: number): Promise<Tick>;
}

export interface Product extends CronJobRuns {
  /** The image's pushed digest. */
  digest: string;
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
  const digest = await c.images.product("image-refresh", IMAGE_TAG);
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
    image: { repository: IMAGE_REPOSITORY, tag: IMAGE_TAG, pullPolicy: "IfNotPresent" },
    // The tests make each tick's Job themselves; one test turns the schedule on.
    suspend: true,
    config,
  };
  await ok(
    h(["install", "image-refresh", CHART, "-n", RELEASE_NS, "-f", valuesFile(values)]),
    "helm install",
  );
  return {
    digest,
    ...cronJobRuns(c),
    async upgrade(v) {
      const f = valuesFile(v);
      await ok(
        h(["upgrade", "image-refresh", CHART, "-n", RELEASE_NS, "--reuse-values", "-f", f]),
        "helm upgrade",
      );
    },
  };
}

export interface Base extends CronJobRuns {
  /** The image's pushed digest. */
  digest: string;
  /** What `kubectl kustomize` rendered from the overlay, as applied. */
  rendered: string;
}

/**
 * The kustomize base as docs/install-kustomize.md has a user install it: an overlay of k8s/base
 * that sets only the image (`images:`) and the config (configMapGenerator, behavior: replace),
 * rendered with `kubectl kustomize` and applied. The base's Namespace enforces `restricted`.
 */
export async function installBase(c: NodeCluster, config: Obj): Promise<Base> {
  const digest = await c.images.product("image-refresh", IMAGE_TAG);
  const dir = mkdtempSync(join(c.dir, "overlay-"));
  // kustomize takes a base only by a relative path; the overlay lives in the cluster's directory.
  const kustomization = {
    resources: [relative(dir, join(K8S, "base"))],
    images: [{ name: "image-refresh", newName: IMAGE_REPOSITORY, newTag: IMAGE_TAG }],
    configMapGenerator: [
      { name: "image-refresh-config", namespace: RELEASE_NS, behavior: "replace", files: ["config.yaml"] },
    ],
  };
  writeFileSync(join(dir, "kustomization.yaml"), JSON.stringify(kustomization));
  writeFileSync(join(dir, "config.yaml"), JSON.stringify(config));
  const rendered = await ok(c.kubectl(["kustomize", dir]), "kubectl kustomize");
  await ok(c.kubectl(["apply", "-f", "-"], { stdin: rendered }), "kubectl apply the rendering");
  // The base's schedule (every 5 minutes) would race the tests' own ticks: suspended, as an
  // operator would before running ticks by hand. A manual Job does not care.
  const suspend = ["--type=merge", "-p", JSON.stringify({ spec: { suspend: true } })];
  await ok(c.kubectl(["patch", "cronjob", CRONJOB, "-n", RELEASE_NS, ...suspend]), "suspend the CronJob");
  return { digest, rendered, ...cronJobRuns(c) };
}

/** Ticks and commands as Jobs of the CronJob image-refresh, in namespace image-refresh. */
export function cronJobRuns(c: NodeCluster): CronJobRuns {
  let jobs = 0;
  return {
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
        const own = list.items.find((j: JobView) => !manual(j));
        job = own?.metadata.name;
        if (!job) await Bun.sleep(1000);
      }
      if (!job) throw new Error(`The CronJob made no Job within ${ms} ms`);
      return await finished(c, job, t0);
    },
  };
}

export interface JobView {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** A Job made by hand (`kubectl create job --from=cronjob/...`), not by the CronJob's schedule. */
export const manual = (j: JobView): boolean =>
  j.metadata.annotations?.["cronjob.kubernetes.io/instantiate"] === "manual";

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
