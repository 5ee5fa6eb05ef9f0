// What the tick observes and what it decides: the vocabulary shared by observe, plan and apply.
import type { WorkloadKind } from "../config.ts";
import type { Outcome } from "../outcomes.ts";

/** Why a tick decided what it did: a closed set, shared by logs, spans, Events and tests. */
export const REASONS = [
  "unchanged",
  "first_observation",
  "digest_changed",
  "not_settled",
  "skip_ceiling",
  "skip_streak_untrusted",
  "flap_lockout",
  "attempt_untrusted",
  "target_unavailable",
  // Reasons only apply can reach, when a planned write or wait does not go through.
  "streak_not_counted",
  "attempt_not_persisted",
  "attempt_claimed",
  "flap_marker_not_written",
  "rollout_failed",
  "reset_failed",
  "record_failed",
  "state_unreadable",
  "stopped",
  "unexpected",
] as const;
export type Reason = (typeof REASONS)[number];

export interface WorkloadRef {
  kind: WorkloadKind;
  namespace: string;
  name: string;
}

export function workloadId(w: WorkloadRef): string {
  return `${w.kind}/${w.namespace}/${w.name}`;
}

export type ObservedDigest = { ok: true; digest: string } | { ok: false; message: string };
export type ObservedWorkload =
  | { found: true; images: Record<string, string> }
  | { found: false; message: string };

export interface Observed {
  state: { annotations: Record<string, string>; settled: boolean; settleMessage: string };
  /** By image key; absent when the settled guard stopped the tick before the registry. */
  digests?: Record<string, ObservedDigest>;
  /** Live container images (containers and init containers) by workloadId; only read when a refresh is due. */
  workloads?: Record<string, ObservedWorkload>;
}

export type Action =
  | { type: "write-streak"; value: number }
  | { type: "clear-streak" }
  | { type: "mark-flap"; count: number }
  | {
      type: "persist-attempt";
      count: number;
      /**
       * First-observation digests of other images, written with the count: the refresh's own
       * record comes only after every rollout settled, and a failed rollout must not lose them.
       */
      firstSeen?: Record<string, string>;
    }
  | {
      type: "rollout";
      workload: WorkloadRef;
      containers: Array<{ name: string; image: string }>;
      images: string[];
    }
  | { type: "reset" }
  | { type: "record-digests"; digests: Record<string, string> }
  | { type: "event"; eventType: "Normal" | "Warning"; reason: string; note: string };

/** State as the tick leaves it when every action succeeds; reported as gauges. */
export interface After {
  attemptCount?: number;
  skipStreak?: number;
  lockedOut: boolean;
  frozen: boolean;
}

export interface Decision {
  outcome: Outcome;
  reason: Reason;
  message: string;
  actions: Action[];
  after: After;
  /** Image keys whose digest moved, for logs and metric attributes. */
  changed: string[];
}
