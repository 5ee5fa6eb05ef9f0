// Status as each workload controller writes it, for one point of a rollout. The field
// sets and omitempty rules follow kubernetes/api apps/v1 types.go, so what kubectl's
// rollout-status viewers read here is what they would read from a real cluster.
import type { WorkloadKind } from "./objects.ts";
import { isObject, type JsonObject } from "./patch.ts";

/**
 * Where a rollout stands. `step` 4 is done; 1–3 are the intermediate points of a 3-replica
 * Deployment rollout after a template change; 0 is an OnDelete rollout whose pods were never replaced.
 */
export interface RolloutPoint {
  replicas: number;
  generation: number;
  step: 0 | 1 | 2 | 3 | 4;
  /** The new pods are momentarily Ready (crashloop). */
  flicker: boolean;
  deadlineExceeded: boolean;
  /** The rollout settled, then its new pods crashed or turned unready: none is available. */
  broken?: boolean;
  /** ReplicaSet / ControllerRevision names of the rolled-out and the wanted template. */
  currentName: string;
  updateName: string;
  now: string;
}

/** Drops zero-valued omitempty fields, as Go's encoder does. */
function omitZero(status: JsonObject, keep: string[]): JsonObject {
  for (const [k, v] of Object.entries(status)) if (v === 0 && !keep.includes(k)) delete status[k];
  return status;
}

interface Condition {
  type: string;
  status: "True" | "False";
  reason: string;
  message: string;
}

/**
 * Keeps timestamps of unchanged conditions so that an unchanged status is a no-op write. A
 * condition whose status and reason did not change is kept as it was, message and times, as the
 * controller's SetDeploymentCondition keeps it; only ReplicaSetUpdated is rewritten on progress.
 */
export function withTimes(conditions: Condition[], previous: unknown, now: string): JsonObject[] {
  const prev = Array.isArray(previous) ? previous.filter(isObject) : [];
  return conditions.map((c) => {
    const old = prev.find((p) => p.type === c.type);
    const sameStatus = old?.status === c.status;
    if (old && sameStatus && old.reason === c.reason && c.reason !== "ReplicaSetUpdated") return { ...old };
    const same = sameStatus && old?.reason === c.reason && old?.message === c.message;
    return {
      type: c.type,
      status: c.status,
      lastUpdateTime: same ? (old?.lastUpdateTime ?? now) : now,
      lastTransitionTime: sameStatus ? (old?.lastTransitionTime ?? now) : now,
      reason: c.reason,
      message: c.message,
    };
  });
}

function deploymentCounts(p: RolloutPoint): { replicas: number; updated: number; available: number } {
  const r = p.replicas;
  if (r === 0) return { replicas: 0, updated: 0, available: 0 };
  if (p.broken) return { replicas: r, updated: r, available: 0 };
  switch (p.step) {
    case 1:
      return { replicas: r + 1, updated: 1, available: p.flicker ? r + 1 : r };
    case 2:
      return { replicas: r + 1, updated: r, available: r };
    case 3:
      return { replicas: r, updated: r, available: r - 1 };
    default:
      return { replicas: r, updated: r, available: r };
  }
}

function deploymentConditions(p: RolloutPoint, available: number): Condition[] {
  const minAvailable = p.replicas - Math.floor(p.replicas / 4); // maxUnavailable 25%, rounded down
  const rs = `ReplicaSet "${p.updateName}"`;
  const progressing: Condition = p.deadlineExceeded
    ? {
        type: "Progressing",
        status: "False",
        reason: "ProgressDeadlineExceeded",
        message: `${rs} has timed out progressing.`,
      }
    : p.step === 4 || p.replicas === 0
      ? {
          type: "Progressing",
          status: "True",
          reason: "NewReplicaSetAvailable",
          message: `${rs} has successfully progressed.`,
        }
      : {
          type: "Progressing",
          status: "True",
          reason: "ReplicaSetUpdated",
          message: `${rs} is progressing.`,
        };
  const availableCond: Condition =
    available >= minAvailable
      ? {
          type: "Available",
          status: "True",
          reason: "MinimumReplicasAvailable",
          message: "Deployment has minimum availability.",
        }
      : {
          type: "Available",
          status: "False",
          reason: "MinimumReplicasUnavailable",
          message: "Deployment does not have minimum availability.",
        };
  return [availableCond, progressing];
}

function deploymentStatus(p: RolloutPoint, previous: JsonObject | undefined): JsonObject {
  const c = deploymentCounts(p);
  const status: JsonObject = {
    observedGeneration: p.generation,
    replicas: c.replicas,
    updatedReplicas: c.updated,
    readyReplicas: c.available,
    availableReplicas: c.available,
    unavailableReplicas: Math.max(0, c.replicas - c.available),
  };
  omitZero(status, []);
  status.conditions = withTimes(deploymentConditions(p, c.available), previous?.conditions, p.now);
  return status;
}

function daemonSetStatus(p: RolloutPoint): JsonObject {
  const d = p.replicas;
  const updated = p.step === 0 ? 0 : p.step === 1 ? Math.min(1, d) : d;
  let available = p.broken ? 0 : p.step === 1 || p.step === 2 ? Math.max(0, d - 1) : d;
  let ready = available;
  // A crash-looping pod is Ready for a moment; it never counts as available when it would finish the rollout.
  if (p.flicker) {
    ready = d;
    if (updated < d) available = d;
  }
  const status: JsonObject = {
    currentNumberScheduled: d,
    numberMisscheduled: 0,
    desiredNumberScheduled: d,
    numberReady: ready,
    observedGeneration: p.generation,
    updatedNumberScheduled: updated,
    numberAvailable: available,
    numberUnavailable: d - available,
  };
  return omitZero(status, [
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
  ]);
}

function statefulSetStatus(p: RolloutPoint): JsonObject {
  const r = p.replicas;
  const done = p.step === 4;
  const updated = { 0: 0, 1: r >= 2 ? 1 : 0, 2: r, 3: r, 4: r }[p.step];
  let ready = p.broken ? 0 : p.step === 1 || p.step === 2 ? Math.max(0, r - 1) : r;
  if (p.flicker) ready = r;
  const status: JsonObject = {
    observedGeneration: p.generation,
    replicas: r,
    readyReplicas: ready,
    currentReplicas: done ? r : r - updated,
    updatedReplicas: updated,
    currentRevision: done ? p.updateName : p.currentName,
    updateRevision: p.updateName,
    collisionCount: 0,
    availableReplicas: ready,
  };
  return omitZero(status, ["replicas", "availableReplicas", "collisionCount"]);
}

export function renderStatus(
  kind: WorkloadKind,
  p: RolloutPoint,
  previous: JsonObject | undefined,
): JsonObject {
  if (kind === "Deployment") return deploymentStatus(p, previous);
  if (kind === "DaemonSet") return daemonSetStatus(p);
  return statefulSetStatus(p);
}
