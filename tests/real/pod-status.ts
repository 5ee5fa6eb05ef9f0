// The status a kubelet writes for a pod, as the fake kubelet's one pure piece: a running pod Ready
// or not (with its restart count), or a Job's pod that Succeeded. Undefined when the pod already
// says so, so the kubelet writes only changes (each write is a new resourceVersion and wakes the
// controllers).
export interface PodLike {
  metadata: {
    namespace: string;
    name: string;
    uid: string;
    deletionTimestamp?: string;
    ownerReferences?: Array<{ kind: string; name: string }>;
  };
  spec: {
    nodeName?: string;
    containers: Array<{ name: string; image: string }>;
    initContainers?: Array<{ name: string; image: string }>;
    affinity?: {
      nodeAffinity?: {
        requiredDuringSchedulingIgnoredDuringExecution?: {
          nodeSelectorTerms?: Array<{
            matchFields?: Array<{ key: string; operator: string; values?: string[] }>;
          }>;
        };
      };
    };
  };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ name: string; restartCount?: number }>;
  };
}

export type PodState = "succeeded" | { ready: boolean; restarts: number };

const seconds = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

function same(pod: PodLike, phase: string, ready: boolean, restarts: number): boolean {
  const s = pod.status;
  const cond = s?.conditions?.find((c) => c.type === "Ready")?.status;
  const counts = (s?.containerStatuses ?? []).map((c) => c.restartCount ?? 0);
  return (
    s?.phase === phase &&
    cond === (ready ? "True" : "False") &&
    counts.length === pod.spec.containers.length &&
    counts.every((c) => c === restarts)
  );
}

export function podStatus(pod: PodLike, state: PodState, started: Date): Record<string, unknown> | undefined {
  const succeeded = state === "succeeded";
  const ready = !succeeded && state.ready;
  const restarts = succeeded ? 0 : state.restarts;
  const phase = succeeded ? "Succeeded" : "Running";
  if (same(pod, phase, ready, restarts)) return undefined;
  const now = seconds(new Date());
  const startedAt = seconds(started);
  const flag = (v: boolean) => (v ? "True" : "False");
  const conditions = [
    { type: "PodScheduled", status: "True" },
    { type: "Initialized", status: "True" },
    { type: "ContainersReady", status: flag(ready) },
    { type: "Ready", status: flag(ready) },
  ].map((c) => ({ ...c, lastProbeTime: null, lastTransitionTime: now }));
  const terminated = { exitCode: 0, reason: "Completed", startedAt, finishedAt: now };
  const running =
    ready || restarts === 0 ? { running: { startedAt } } : { waiting: { reason: "CrashLoopBackOff" } };
  const containerStatuses = pod.spec.containers.map((c) => ({
    name: c.name,
    image: c.image,
    imageID: c.image,
    ready,
    started: !succeeded && ready,
    restartCount: restarts,
    state: succeeded ? { terminated } : running,
  }));
  const initContainerStatuses = (pod.spec.initContainers ?? []).map((c) => ({
    name: c.name,
    image: c.image,
    imageID: c.image,
    ready: true,
    restartCount: 0,
    state: { terminated },
  }));
  return { phase, conditions, containerStatuses, initContainerStatuses, startTime: startedAt };
}
