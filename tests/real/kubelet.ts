// A fake kubelet (and scheduler) for the real control plane, over HTTPS with fetch: it registers
// Ready Nodes, binds unscheduled pods, writes pod status as a kubelet would, finishes graceful
// deletions and completes Job pods. How a pod's containers behave is chosen by the test per image
// digest, so a build can be healthy, slow, never Ready, flapping (Ready, then not, again and
// again, with a growing restartCount, as a crash-looping container looks), unable to pull its
// image (ErrImagePull, ImagePullBackOff), or Ready first and then crashing (CrashLoopBackOff,
// restarts growing) or turning unready, some time after it became Ready: a build that dies after
// its warm-up.
import type { Api } from "./api.ts";
import { expectStatus } from "./api.ts";
import { type PodLike, type PodShows, podStatus } from "./pod-status.ts";

export type Build =
  | "healthy"
  | "slow"
  | "never"
  | "flapping"
  | "pull"
  | { crashAfterMs: number }
  | { unreadyAfterMs: number };

export interface KubeletOptions {
  nodes?: string[];
  /** How long a healthy pod takes to become Ready; default 300 ms. */
  startMs?: number;
  /** How long a slow pod takes; default 5 s. */
  slowMs?: number;
  /** A flapping pod is Ready for upMs, then not Ready for downMs, and so on; default 1 s each. */
  upMs?: number;
  downMs?: number;
  pollMs?: number;
}

export interface Kubelet {
  nodes: string[];
  /** Pods whose images name `digest` (sha256:...) behave as `build` from now on. */
  build(digest: string, build: Build): void;
  stop(): Promise<void>;
}

interface Timing {
  startMs: number;
  slowMs: number;
  upMs: number;
  downMs: number;
}

/** Whether a pod `ageMs` old whose worst image is `build` is Ready, its restart count and why it waits. */
export function readiness(build: Build, ageMs: number, t: Timing): PodShows {
  if (typeof build === "object") return later(build, ageMs, t);
  switch (build) {
    case "healthy":
      return { ready: ageMs >= t.startMs, restarts: 0 };
    case "slow":
      return { ready: ageMs >= t.slowMs, restarts: 0 };
    // Running, never Ready (a readiness probe that never passes): no restart, so only the
    // controller's progress deadline or rolloutTimeout ends a wait for it.
    case "never":
      return { ready: false, restarts: 0 };
    // ContainerCreating while the first pull is tried, then ErrImagePull and ImagePullBackOff in turn.
    case "pull": {
      if (ageMs < t.startMs) return { ready: false, restarts: 0, waiting: "ContainerCreating" };
      const backoff = Math.floor((ageMs - t.startMs) / t.downMs) % 2 === 1;
      return { ready: false, restarts: 0, waiting: backoff ? "ImagePullBackOff" : "ErrImagePull" };
    }
    case "flapping": {
      const period = t.upMs + t.downMs;
      const into = Math.max(0, ageMs - t.startMs);
      return { ready: ageMs >= t.startMs && into % period < t.upMs, restarts: Math.floor(into / period) };
    }
  }
}

/**
 * Ready from startMs, then crashing (or unready) from startMs + the build's delay. As on a real
 * node, the first crash restarts at once: not Ready (restartCount still 0) for startMs, then Ready
 * again with restartCount 1 for upMs (at most the build's delay); CrashLoopBackOff only from the
 * second crash on, restarted after a back-off of downMs, doubling, capped at thirty times that.
 */
function later(build: Exclude<Build, string>, ageMs: number, t: Timing): PodShows {
  const crash = "crashAfterMs" in build;
  const breaks = t.startMs + (crash ? build.crashAfterMs : build.unreadyAfterMs);
  if (ageMs < breaks) return { ready: ageMs >= t.startMs, restarts: 0 };
  if (!crash) return { ready: false, restarts: 0 };
  if (ageMs < breaks + t.startMs) return { ready: false, restarts: 0 };
  const second = breaks + t.startMs + Math.min(t.upMs, build.crashAfterMs);
  if (ageMs < second) return { ready: true, restarts: 1 };
  return { ready: false, restarts: 1 + backoffs(ageMs - second, t.downMs), waiting: "CrashLoopBackOff" };
}

/** How many restarts a crash-looping container has had `ms` after its second crash. */
function backoffs(ms: number, unit: number): number {
  let n = 0;
  for (let spent = 0; ; n++) {
    spent += Math.min(unit * 2 ** n, unit * 30);
    if (spent > ms) return n;
  }
}

/** The worst first; a build that fails later ranks after those that never work. */
const WORST = ["pull", "never", "flapping", "later", "slow", "healthy"];
const rank = (b: Build) => WORST.indexOf(typeof b === "object" ? "later" : b);

export async function startKubelet(api: Api, opts: KubeletOptions = {}): Promise<Kubelet> {
  const nodes = opts.nodes ?? ["node-1"];
  const timing: Timing = {
    startMs: opts.startMs ?? 300,
    slowMs: opts.slowMs ?? 5000,
    upMs: opts.upMs ?? 1000,
    downMs: opts.downMs ?? 1000,
  };
  const builds = new Map<string, Build>();
  const firstSeen = new Map<string, number>();
  for (const n of nodes) await registerNode(api, n);
  const buildOf = (pod: PodLike): Build => {
    const images = [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])].map((c) => c.image);
    const named = images.map((i) => builds.get(/@(sha256:[0-9a-f]{64})$/.exec(i)?.[1] ?? "") ?? "healthy");
    return named.sort((a, b) => rank(a) - rank(b))[0] ?? "healthy";
  };
  let stopped = false;
  const step = async () => {
    const pods = (await api.get("/api/v1/pods")).items as PodLike[];
    await Promise.all(pods.map((p) => tend(api, p, { nodes, timing, buildOf, firstSeen })));
  };
  const loop = (async () => {
    while (!stopped) {
      await step().catch((e) => {
        if (!stopped) console.error(`fake kubelet: ${e}`);
      });
      await Bun.sleep(opts.pollMs ?? 150);
    }
  })();
  return {
    nodes,
    build: (digest, build) => void builds.set(digest, build),
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** A Node with a Ready status and, once created, without the not-ready taint admission adds. */
async function registerNode(api: Api, name: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const capacity = { cpu: "32", memory: "64Gi", pods: "110" };
  const conditions = [
    { type: "Ready", status: "True", reason: "KubeletReady", message: "fake kubelet" },
    ...["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
      type,
      status: "False",
      reason: "Fine",
    })),
  ].map((c) => ({ ...c, lastHeartbeatTime: now, lastTransitionTime: now }));
  const status = { capacity, allocatable: capacity, conditions, nodeInfo: { kubeletVersion: "v1.36.3" } };
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
    status,
  };
  expectStatus(await api.request("POST", "/api/v1/nodes", { body: node }), `create node ${name}`);
  // Status is written again through its subresource (the create may keep only part of it), and
  // TaintNodesByCondition's not-ready taint is removed as the node-lifecycle controller would.
  const merge = "application/merge-patch+json";
  const path = `/api/v1/nodes/${name}`;
  expectStatus(
    await api.request("PATCH", `${path}/status`, { body: { status }, contentType: merge }),
    "node status",
  );
  expectStatus(
    await api.request("PATCH", path, { body: { spec: { taints: null } }, contentType: merge }),
    "untaint",
  );
}

interface Tending {
  nodes: string[];
  timing: Timing;
  buildOf: (pod: PodLike) => Build;
  firstSeen: Map<string, number>;
}

/** One look at one pod: bind it, finish its deletion, complete it (Job) or write its readiness. */
async function tend(api: Api, pod: PodLike, k: Tending): Promise<void> {
  const { namespace, name, uid } = pod.metadata;
  const path = `/api/v1/namespaces/${namespace}/pods/${name}`;
  if (pod.metadata.deletionTimestamp) {
    if (!pod.spec.nodeName) return;
    const body = { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0, preconditions: { uid } };
    expectStatus(await api.request("DELETE", path, { body }), `delete pod ${name}`, [200, 404, 409]);
    return;
  }
  if (!pod.spec.nodeName) {
    const target = { apiVersion: "v1", kind: "Node", name: nodeFor(pod, k.nodes) };
    const binding = { apiVersion: "v1", kind: "Binding", metadata: { name }, target };
    expectStatus(
      await api.request("POST", `${path}/binding`, { body: binding }),
      `bind pod ${name}`,
      [201, 409],
    );
    return;
  }
  if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
  const seen = k.firstSeen.get(uid) ?? Date.now();
  k.firstSeen.set(uid, seen);
  const job = pod.metadata.ownerReferences?.some((o) => o.kind === "Job") ?? false;
  const state = job ? "succeeded" : readiness(k.buildOf(pod), Date.now() - seen, k.timing);
  const status = podStatus(pod, state, new Date(seen));
  if (status === undefined) return; // already what it should be
  const r = await api.request("PATCH", `${path}/status`, {
    body: { status },
    contentType: "application/merge-patch+json",
  });
  expectStatus(r, `write status of pod ${name}`, [200, 404, 409]);
}

/** The Node a DaemonSet pod's affinity names (matchFields metadata.name), else the first. */
function nodeFor(pod: PodLike, nodes: string[]): string {
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  for (const t of terms)
    for (const f of t.matchFields ?? [])
      if (f.key === "metadata.name" && f.operator === "In" && f.values?.[0]) return f.values[0];
  return nodes[0] ?? "node-1";
}
