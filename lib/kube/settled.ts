// kubectl's `rollout status` rules (kubectl pkg/polymorphichelpers/rollout_status.go), pure and
// exact, including the messages, so an operator sees the same words kubectl would print. A missing
// status number is 0, as Go's zero value is. The trailing "\n" kubectl prints is left off. One
// departure, for the wait on a rollout we started only: a progress deadline the Deployment already
// carried when our write was answered is an earlier rollout's, not this one's (deadlineExceeded).
import { type StatusViewer, WORKLOAD_KIND_TABLE } from "../workload.ts";
import type { Workload } from "./objects.ts";

export interface RolloutStatus {
  done: boolean;
  message: string;
  /** Set when kubectl would stop with `error: ...`: a progress deadline, or a non-RollingUpdate strategy. */
  error?: string;
}

/**
 * `written`, when given, is the object as the write that started the rollout being waited for
 * left it (the PATCH response): see `deadlineExceeded`. Without it (the settled guard, `status`)
 * every progress deadline counts, as it does for kubectl.
 */
export function rolloutStatus(w: Workload, written?: Workload): RolloutStatus {
  return VIEWERS[WORKLOAD_KIND_TABLE[w.kind].status](w, written);
}

/** Each of kubectl's viewers, named as a kind's row names it: a viewer without a rule does not compile. */
const VIEWERS: Record<StatusViewer, (w: Workload, written?: Workload) => RolloutStatus> = {
  DeploymentStatusViewer: deploymentStatus,
  DaemonSetStatusViewer: daemonSetStatus,
  StatefulSetStatusViewer: statefulSetStatus,
};

const n = (v: number | undefined) => v ?? 0;

/** Reason the deployment controller puts on Progressing when progressDeadlineSeconds passed. */
export const PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded";

type Condition = NonNullable<Workload["status"]["conditions"]>[number];

/** The first Progressing condition, the one kubectl reads. */
const progressingOf = (w: Workload): Condition | undefined =>
  w.status.conditions?.find((c) => c.type === "Progressing");

const sameCondition = (a: Condition, b: Condition): boolean =>
  a.status === b.status &&
  a.reason === b.reason &&
  a.message === b.message &&
  a.lastUpdateTime === b.lastUpdateTime &&
  a.lastTransitionTime === b.lastTransitionTime;

/**
 * Whether `w`'s Progressing condition says ProgressDeadlineExceeded (kubectl looks at its reason
 * only), and, given `written`, says it about the rollout that write started. The deployment
 * controller keeps a condition at that reason until the Deployment is complete again, also across
 * a new generation that brings back an existing ReplicaSet (a revert, a `rollout undo`), which
 * resets no condition. So the very condition `written` already carried is an earlier rollout's,
 * not a verdict on this one; a deadline this rollout runs out of is a new condition (new times:
 * the controller only reaches it again after reporting progress). No clocks are compared.
 */
export function deadlineExceeded(w: Workload, written?: Workload): boolean {
  const now = progressingOf(w);
  if (now?.reason !== PROGRESS_DEADLINE_EXCEEDED) return false;
  const then = written && progressingOf(written);
  return !(then && sameCondition(now, then));
}

function deploymentStatus(w: Workload, written: Workload | undefined): RolloutStatus {
  const { name, generation } = w.metadata;
  const s = w.status;
  if (generation > n(s.observedGeneration)) {
    return { done: false, message: "Waiting for deployment spec update to be observed..." };
  }
  if (deadlineExceeded(w, written)) {
    const error = `deployment "${name}" exceeded its progress deadline`;
    return { done: false, message: error, error };
  }
  const wait = `Waiting for deployment "${name}" rollout to finish: `;
  const replicas = w.spec.replicas;
  if (replicas !== undefined && n(s.updatedReplicas) < replicas) {
    return {
      done: false,
      message: `${wait}${n(s.updatedReplicas)} out of ${replicas} new replicas have been updated...`,
    };
  }
  if (n(s.replicas) > n(s.updatedReplicas)) {
    return {
      done: false,
      message: `${wait}${n(s.replicas) - n(s.updatedReplicas)} old replicas are pending termination...`,
    };
  }
  if (n(s.availableReplicas) < n(s.updatedReplicas)) {
    return {
      done: false,
      message: `${wait}${n(s.availableReplicas)} of ${n(s.updatedReplicas)} updated replicas are available...`,
    };
  }
  return { done: true, message: `deployment "${name}" successfully rolled out` };
}

const ROLLING_ONLY = "rollout status is only available for RollingUpdate strategy type";

/**
 * Why changing this workload's pod template would start no rollout that could settle, or
 * undefined when it would: an OnDelete DaemonSet or StatefulSet replaces a pod only when someone
 * deletes it (kubectl rollout status refuses it), and a paused Deployment does not roll at all
 * (kubectl rollout restart refuses it).
 */
export function rolloutBlocked(w: Workload): string | undefined {
  if (w.kind === "Deployment")
    return w.spec.paused ? "the deployment is paused (kubectl rollout resume it first)" : undefined;
  const type = w.spec.updateStrategy?.type;
  return type === "RollingUpdate" ? undefined : `${ROLLING_ONLY}; its updateStrategy is ${type ?? "unset"}`;
}

function daemonSetStatus(w: Workload): RolloutStatus {
  const { name, generation } = w.metadata;
  const s = w.status;
  // kubectl returns done=true with this error; as a failure it must not read as settled here.
  if (w.spec.updateStrategy?.type !== "RollingUpdate")
    return { done: false, message: ROLLING_ONLY, error: ROLLING_ONLY };
  if (generation > n(s.observedGeneration)) {
    return { done: false, message: "Waiting for daemon set spec update to be observed..." };
  }
  const wait = `Waiting for daemon set "${name}" rollout to finish: `;
  const desired = n(s.desiredNumberScheduled);
  if (n(s.updatedNumberScheduled) < desired) {
    return {
      done: false,
      message: `${wait}${n(s.updatedNumberScheduled)} out of ${desired} new pods have been updated...`,
    };
  }
  if (n(s.numberAvailable) < desired) {
    return {
      done: false,
      message: `${wait}${n(s.numberAvailable)} of ${desired} updated pods are available...`,
    };
  }
  return { done: true, message: `daemon set "${name}" successfully rolled out` };
}

function statefulSetStatus(w: Workload): RolloutStatus {
  const s = w.status;
  const strategy = w.spec.updateStrategy;
  if (strategy?.type !== "RollingUpdate") return { done: false, message: ROLLING_ONLY, error: ROLLING_ONLY };
  const observed = n(s.observedGeneration);
  if (observed === 0 || w.metadata.generation > observed) {
    return { done: false, message: "Waiting for statefulset spec update to be observed..." };
  }
  const replicas = w.spec.replicas;
  if (replicas !== undefined && n(s.readyReplicas) < replicas) {
    return { done: false, message: `Waiting for ${replicas - n(s.readyReplicas)} pods to be ready...` };
  }
  if (strategy.rollingUpdate) {
    const partition = strategy.rollingUpdate.partition;
    if (replicas !== undefined && partition !== undefined && n(s.updatedReplicas) < replicas - partition) {
      return {
        done: false,
        message: `Waiting for partitioned roll out to finish: ${n(s.updatedReplicas)} out of ${replicas - partition} new pods have been updated...`,
      };
    }
    return {
      done: true,
      message: `partitioned roll out complete: ${n(s.updatedReplicas)} new pods have been updated...`,
    };
  }
  if ((s.updateRevision ?? "") !== (s.currentRevision ?? "")) {
    return {
      done: false,
      message: `waiting for statefulset rolling update to complete ${n(s.updatedReplicas)} pods at revision ${s.updateRevision ?? ""}...`,
    };
  }
  return {
    done: true,
    message: `statefulset rolling update complete ${n(s.currentReplicas)} pods at revision ${s.currentRevision ?? ""}...`,
  };
}
