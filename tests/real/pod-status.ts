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
    containerStatuses?: Array<{
      name: string;
      restartCount?: number;
      state?: { waiting?: { reason?: string } };
    }>;
  };
}

/** A running pod: Ready or not, its restart count, and why its containers wait (CrashLoopBackOff, ErrImagePull...). */
export interface PodShows {
  ready: boolean;
  restarts: number;
  waiting?: string;
}
export type PodState = "succeeded" | PodShows;

const seconds = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

function same(pod: PodLike, phase: string, shows: PodShows): boolean {
  const s = pod.status;
  const cond = s?.conditions?.find((c) => c.type === "Ready")?.status;
  const counts = (s?.containerStatuses ?? []).map((c) => c.restartCount ?? 0);
  const waits = (s?.containerStatuses ?? []).map((c) => c.state?.waiting?.reason);
  return (
    s?.phase === phase &&
    cond === (shows.ready ? "True" : "False") &&
    counts.length === pod.spec.containers.length &&
    counts.every((c) => c === shows.restarts) &&
    waits.every((w) => w === waitingOf(shows))
  );
}

/** Why the containers wait: as the build says, else CrashLoopBackOff for an unready pod that restarted. */
function waitingOf(s: PodShows): string | undefined {
  return s.waiting ?? (!s.ready && s.restarts > 0 ? "CrashLoopBackOff" : undefined);
}

export function podStatus(pod: PodLike, state: PodState, started: Date): Record<string, unknown> | undefined {
  const succeeded = state === "succeeded";
  const ready = !succeeded && state.ready;
  const restarts = succeeded ? 0 : state.restarts;
  const waiting = succeeded ? undefined : waitingOf(state);
  const pulling =
    waiting === "ContainerCreating" || waiting === "ErrImagePull" || waiting === "ImagePullBackOff";
  const phase = succeeded ? "Succeeded" : pulling ? "Pending" : "Running";
  if (!succeeded && same(pod, phase, state)) return undefined;
  if (succeeded && same(pod, phase, { ready: false, restarts: 0 })) return undefined;
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
  const running = waiting ? { waiting: { reason: waiting } } : { running: { startedAt } };
  const lastState =
    restarts > 0 ? { terminated: { exitCode: 1, reason: "Error", startedAt, finishedAt: now } } : {};
  const containerStatuses = pod.spec.containers.map((c) => ({
    name: c.name,
    image: c.image,
    imageID: c.image,
    ready,
    started: !succeeded && ready,
    restartCount: restarts,
    state: succeeded ? { terminated } : running,
    lastState,
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
