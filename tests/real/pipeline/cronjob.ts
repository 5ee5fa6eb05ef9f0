// The shipped CronJob (k8s/base) on the real control plane, on a compressed schedule. What is
// real and what the test writes:
//   - real: kube-apiserver (admission: restricted pod security, the ServiceAccount), the Job
//     controller (creates the pod, sets startTime, counts failed/succeeded, writes the Complete
//     or Failed condition and completionTime), the CronJob controller (removes a finished Job
//     from status.active, sets status.lastSuccessfulTime from the Job's completionTime, deletes
//     Jobs beyond the history limits, honours spec.suspend);
//   - written by the test: the schedule. Cron's one-minute granularity does not compress, so
//     spec.schedule is set to once a year (the controller never schedules on its own during a
//     run) and at every compressed 5 minutes the test does what the controller does when a
//     schedule comes: it creates the Job from spec.jobTemplate, owned by the CronJob, and writes
//     status.active and status.lastScheduleTime through the status subresource. It skips while
//     a Job is still active (concurrencyPolicy: Forbid) or the CronJob is suspended;
//   - written by the test as a kubelet would: the Job pod's binding and its terminal status
//     (Succeeded with exit code 0 or Failed with exit code 1; the story says which).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Api, expectStatus } from "../api.ts";
import type { PodLike } from "../pod-status.ts";

const BASE = join(import.meta.dir, "..", "..", "..", "k8s", "base");
export const NS = "image-refresh";
export const NAME = "image-refresh";
const CJ = `/apis/batch/v1/namespaces/${NS}/cronjobs/${NAME}`;
const MERGE = "application/merge-patch+json";
/** Once a year: the real controller never schedules during a run. */
export const YEARLY = "0 0 1 1 *";

const rfc3339 = (t: number) => new Date(t).toISOString().replace(/\.\d+Z$/, "Z");
// biome-ignore lint/suspicious/noExplicitAny: manifests are read loosely
const manifest = (file: string): any => Bun.YAML.parse(readFileSync(join(BASE, file), "utf8"));

/** k8s/base's namespace, ServiceAccount and CronJob as shipped, but for the schedule. */
export async function applyBase(api: Api): Promise<void> {
  const ns = manifest("namespace.yaml");
  expectStatus(await api.request("POST", "/api/v1/namespaces", { body: ns }), "create namespace");
  const sa = manifest("serviceaccount.yaml");
  const saPath = `/api/v1/namespaces/${NS}/serviceaccounts`;
  expectStatus(await api.request("POST", saPath, { body: sa }), "create ServiceAccount");
  const cj = manifest("cronjob.yaml");
  cj.spec.schedule = YEARLY;
  const cjPath = `/apis/batch/v1/namespaces/${NS}/cronjobs`;
  expectStatus(await api.request("POST", cjPath, { body: cj }), "create CronJob");
}

// biome-ignore lint/suspicious/noExplicitAny: API objects are read loosely
export const cronJob = (api: Api): Promise<any> => api.get(CJ);
// biome-ignore lint/suspicious/noExplicitAny: API objects are read loosely
export const jobs = async (api: Api): Promise<any[]> =>
  (await api.get(`/apis/batch/v1/namespaces/${NS}/jobs`)).items;

/** Each Job's state as its conditions say: failed, succeeded (Complete) or running. */
export async function jobStates(api: Api): Promise<Record<string, "running" | "failed" | "succeeded">> {
  const on = (j: { status?: { conditions?: Array<{ type: string; status: string }> } }, type: string) =>
    (j.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");
  return Object.fromEntries(
    (await jobs(api)).map((j) => [
      j.metadata.name as string,
      on(j, "Failed") ? "failed" : on(j, "Complete") ? "succeeded" : "running",
    ]),
  );
}

export async function setSuspend(api: Api, suspend: boolean): Promise<void> {
  expectStatus(
    await api.request("PATCH", CJ, { body: { spec: { suspend } }, contentType: MERGE }),
    "suspend",
  );
}

/**
 * One schedule of the CronJob at `now`, as the controller does it: the Job (named after the
 * scheduled time, here a counter) from the template, then active and lastScheduleTime. Returns
 * the Job's name, or undefined when the CronJob is suspended or a Job is still active.
 */
export async function scheduleOnce(api: Api, n: number, now = Date.now()): Promise<string | undefined> {
  const cj = await cronJob(api);
  if (cj.spec.suspend || (cj.status?.active ?? []).length > 0) return undefined;
  const name = `${NAME}-${10_000_000 + n * 5}`;
  const tpl = cj.spec.jobTemplate;
  const job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: NS,
      labels: tpl.metadata?.labels,
      annotations: { "batch.kubernetes.io/cronjob-scheduled-timestamp": rfc3339(now) },
      ownerReferences: [
        {
          apiVersion: "batch/v1",
          kind: "CronJob",
          name: NAME,
          uid: cj.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: tpl.spec,
  };
  const made = expectStatus(
    await api.request("POST", `/apis/batch/v1/namespaces/${NS}/jobs`, { body: job }),
    `create Job ${name}`,
  ).body;
  const ref = { apiVersion: "batch/v1", kind: "Job", namespace: NS, name, uid: made.metadata.uid };
  await updateStatus(api, (s) => ({
    ...s,
    active: [...(s.active ?? []), ref],
    lastScheduleTime: rfc3339(now),
  }));
  return name;
}

type Status = Record<string, unknown> & { active?: unknown[] };

/** A read-modify-write of the CronJob's status, retried when the controller wrote in between. */
async function updateStatus(api: Api, change: (s: Status) => Status): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const cj = await cronJob(api);
    cj.status = change(cj.status ?? {});
    const r = await api.request("PUT", `${CJ}/status`, { body: cj });
    if (r.status === 200) return;
    if (r.status !== 409) expectStatus(r, "write CronJob status");
  }
  throw new Error("Cannot write the CronJob's status: 20 conflicts in a row");
}

export interface JobKubelet {
  /** The exit code the pods of Job `name` end with. */
  exitCode: Map<string, number>;
  stop(): Promise<void>;
}

/** Binds the namespace's Job pods and ends each one with its Job's exit code. */
export function jobKubelet(api: Api, every = 100): JobKubelet {
  const exitCode = new Map<string, number>();
  let stopped = false;
  const step = async () => {
    const pods = (await api.get(`/api/v1/namespaces/${NS}/pods`)).items as Array<
      PodLike & { metadata: { labels?: Record<string, string> } }
    >;
    for (const pod of pods) await tend(api, pod, exitCode);
  };
  const loop = (async () => {
    while (!stopped) {
      await step().catch((e) => {
        if (!stopped) console.error(`job kubelet: ${e}`);
      });
      await Bun.sleep(every);
    }
  })();
  return {
    exitCode,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

async function tend(
  api: Api,
  pod: PodLike & { metadata: { labels?: Record<string, string> } },
  exitCode: Map<string, number>,
) {
  const { name } = pod.metadata;
  const path = `/api/v1/namespaces/${NS}/pods/${name}`;
  if (pod.metadata.deletionTimestamp) return;
  if (!pod.spec.nodeName) {
    const binding = {
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name },
      target: { kind: "Node", name: "node-1" },
    };
    expectStatus(await api.request("POST", `${path}/binding`, { body: binding }), `bind ${name}`, [201, 409]);
    return;
  }
  if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
  const job = pod.metadata.labels?.["batch.kubernetes.io/job-name"] ?? "";
  const code = exitCode.get(job);
  if (code === undefined) return;
  const r = await api.request("PATCH", `${path}/status`, {
    body: { status: ended(pod, code) },
    contentType: MERGE,
  });
  expectStatus(r, `end pod ${name}`, [200, 404, 409]);
}

/** A pod whose one container ran and exited with `code`, as a kubelet reports it. */
function ended(pod: PodLike, code: number): Record<string, unknown> {
  const now = rfc3339(Date.now());
  const terminated = {
    exitCode: code,
    reason: code === 0 ? "Completed" : "Error",
    startedAt: now,
    finishedAt: now,
  };
  const conditions = ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map((type) => ({
    type,
    status: type === "PodScheduled" || type === "Initialized" ? "True" : "False",
    lastProbeTime: null,
    lastTransitionTime: now,
  }));
  return {
    phase: code === 0 ? "Succeeded" : "Failed",
    conditions,
    startTime: now,
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: c.image,
      ready: false,
      started: false,
      restartCount: 0,
      state: { terminated },
    })),
  };
}
