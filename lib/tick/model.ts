// What the tick observes and what it decides: the vocabulary shared by observe, plan and apply.
import type { EventReason, EventSubject } from "../kube/events.ts";
import type { FieldOwner } from "../kube/managed-fields.ts";
import type { Pod } from "../kube/pods.ts";
import type { Outcome } from "../outcomes.ts";
import type { SignatureVerdict } from "../signature/reader.ts";
import type { Book } from "../state/book.ts";
import type { Change } from "../state/change.ts";
import type { LegacyInput } from "../state/legacy.ts";
import type { WorkloadRef } from "../workload.ts";

/** Why an image (or the tick) ended as it did: a closed set, shared by logs, spans, Events and tests. */
export const REASONS = [
  "unchanged",
  "pinned",
  "first_observation",
  "digest_changed",
  "not_settled",
  "skip_ceiling",
  "skip_streak_untrusted",
  "flap_lockout",
  "attempt_untrusted",
  "target_unavailable",
  "target_mismatch",
  "shared_workload",
  "unresolved",
  "unresolved_ceiling",
  "unresolved_streak_untrusted",
  "build_rejected",
  "pinned_by_human",
  "tag_rerendered",
  "pin_restored",
  "pin_contested",
  "minimum_age",
  // A new build of an image with a verify policy whose signature does not verify (none, or none good),
  // could not be read from the registry this tick, or was not checked here (status without the keys).
  "unsigned",
  "signature_invalid",
  "signature_unreadable",
  "signature_unchecked",
  // Reasons only apply can reach, when a planned write or wait does not go through.
  "streak_not_counted",
  "attempt_not_persisted",
  "attempt_claimed",
  "patch_refused",
  "flap_marker_not_written",
  "rollout_failed",
  "rollout_failed_reverted",
  "revert_failed",
  // A verified build whose pods failed within regressionWindow: a failed attempt, reverted.
  "regressed",
  "reset_failed",
  "record_failed",
  "store_unreadable",
  "stopped",
  "unexpected",
] as const;
export type Reason = (typeof REASONS)[number];

export type { WorkloadRef } from "../workload.ts";
export { describeWorkload, workloadId } from "../workload.ts";

export type ObservedDigest =
  | { ok: true; digest: string }
  /** `failure` is the registry client's reason (not_found, unauthorized, rate_limited, ...). */
  | { ok: false; failure: string; message: string };
export type ObservedWorkload =
  /** `blocked`: why a patch here could start no rollout (OnDelete, paused); it holds a due refresh. */
  | {
      found: true;
      images: Record<string, string>;
      /** Who last changed each container's image (managedFields), by container name. */
      owners?: Record<string, FieldOwner[]>;
      /** Each container's JSON-pointer path in the object, by container name: what a patch addresses. */
      paths?: Record<string, string>;
      blocked?: string;
      /** Its spec.selector as a labelSelector: where its pods are listed. */
      selector?: string;
      /** kubectl rollout status' verdict: settled, and what it says when not. */
      settled: boolean;
      settleMessage: string;
    }
  | { found: false; message: string };

export interface ObservedRegistry {
  retryAfter?: number;
  held: boolean;
  remember?: string | null;
}

export interface Observed {
  /** The store's book, with the legacy annotations of images the store has no entry of yet. */
  book: Book;
  /** By image key, for every image that is not pinned. */
  digests?: Record<string, ObservedDigest>;
  /** Every target of every image that is not pinned, by workloadId, read before any decision. */
  workloads?: Record<string, ObservedWorkload>;
  /**
   * The pods of each target, settled or not, that runs a build still inside its regressionWindow, by
   * workloadId (an error when they could not be listed): what a regression is judged from.
   */
  pods?: Record<string, Pod[] | { error: string }>;
  /** Images whose attempt count another tick raised while this one was deciding: that tick owns them. */
  claimed?: string[];
  /**
   * Each registry's quota, as this tick met it, by registry host key (every host an image was
   * resolved against): `retryAfter` is the time (ms, the tick's clock + a 429's Retry-After) to
   * store; `held` means a stored one was still in force, so that registry was not called;
   * `remember` is its API root's answer to store for the next tick (null: remove the stored one),
   * set when this tick asked the root or a remembered answer failed.
   */
  registries?: Record<string, ObservedRegistry>;
  /** Signature verdicts of the builds due, by image key: the second look, after a first plan asked for them. */
  signatures?: Record<string, { digest: string; verdict: SignatureVerdict }>;
  /** The tick's clock in ms: the store GET's `Date` (whole seconds), for every stored time. */
  clock?: number;
}

/** One image's verdict for this tick, as planned; apply amends it when a write or rollout fails. */
export interface ImageVerdict {
  key: string;
  repository: string;
  outcome: Outcome;
  reason: Reason;
  /** One sentence for the log: what happened to this image and what to do. */
  message: string;
  /** The short form in the tick's last line, after the outcome: "3/3", "2/8 (not_found)". */
  short?: string;
  /** The digest this tick rolls out (a refresh) or records. */
  digest?: string;
  /** The refresh attempt this tick starts (1-based), the number its message names. */
  attempt?: number;
  /** Counters as the tick leaves them when every write succeeds; undefined: no honest value. */
  attemptCount?: number;
  unresolvedStreak?: number;
  lockedOut?: boolean;
  paused: boolean;
  /** The registry's digest equals the recorded one this tick. */
  verified: boolean;
  /** Every target container runs the recorded pin; undefined when not every target was read. */
  inSync?: boolean;
  /** A re-pin: the field managers that had put the floating tag back, for the PinRestored Event. */
  restoredFrom?: string[];
  /** A re-pin that adopts a tag-following install (its first pin): a Normal Event, no pin replaced. */
  adopted?: boolean;
  /** A pause: the command that hands the container back. */
  resume?: string;
  /** The skip streak as the tick leaves it (undefined: no honest count). */
  skipStreak?: number;
  /** A target unsettled for maxSkipTicks ticks in a row. */
  frozen?: boolean;
  /** Lines logged at warn beside the verdict (an unreadable store key this tick rewrites). */
  warnings?: string[];
}

/** The one compare-and-swap write of the store before any workload is touched (counts and streaks). */
export interface StateWrite {
  /** Store keys to set or remove, except the attempt keys below. */
  change: Change;
  /**
   * Each due image's new count; apply adds the count, this tick's traceparent and the digest tried.
   * `regressed`: the count is a regression's, its digest the build that failed after verification;
   * `at` when it was seen (the last attempt's time; the tick's clock when absent).
   */
  attempts: Record<string, { count: number; digest: string; regressed?: boolean; at?: number }>;
  /** Due images whose rollout is a re-pin to the recorded digest (a tag re-rendered over the pin). */
  repins: string[];
  /** Images whose unresolved or skip streak goes up: the write must land, or the tick fails. */
  streaks: string[];
  /** Images whose flap marker is written. */
  flaps: string[];
  /** First-observation digests that ride with this write. */
  firstSeen: string[];
}

/** One container of a rollout: the image it gets, where it sits, and the image it had (what a revert restores). */
export interface RolloutContainer {
  name: string;
  image: string;
  /** JSON-pointer path of the container's image in the workload, as observed. */
  path?: string;
  /** The image the container named when this tick read the workload. */
  before?: string;
}

export interface Rollout {
  workload: WorkloadRef;
  containers: RolloutContainer[];
  /** Image keys with a container in this patch. */
  images: string[];
  /** The images that move together with this rollout (those sharing workloads with it). */
  group: number;
  /** Back to the build before a regression: a revert, so a failure is not reverted again. */
  back?: boolean;
}

export type Action =
  | ({ type: "write-state" } & StateWrite)
  | ({ type: "rollout" } & Rollout)
  /** Resets the counters of the images that settled; the value is the count this tick wrote. */
  | { type: "reset"; counts: Record<string, number> }
  /** `candidates`: minimumAge lists by image key, rewritten in the same write (null: removed). */
  | {
      type: "record-digests";
      digests: Record<string, string>;
      candidates?: Record<string, string | null>;
      /** Keys that ride with this write when the tick makes no earlier one (the installation's, an adopt marker). */
      also?: Record<string, string | null>;
    }
  /** After a regression's revert settled: the build the targets are back on is the one recorded. */
  | { type: "record-revert"; digests: Record<string, string> }
  /** Re-pinned images whose rollouts settled: one PinRestored Event naming who had removed the pin. */
  | { type: "pin-restored"; images: string[] }
  /** An Event about each of `regarding` (the image's targets; for a freeze, the workload that does not settle). */
  | {
      type: "event";
      eventType: "Normal" | "Warning";
      reason: EventReason;
      note: string;
      image?: string;
      regarding: WorkloadRef[];
    };

export interface Decision {
  outcome: Outcome;
  reason: Reason;
  message: string;
  /** Every configured image in config order; empty when the settled guard stopped the tick. */
  images: ImageVerdict[];
  /** Image groups that move together, by Rollout.group. */
  groups: Record<number, string[]>;
  actions: Action[];
}

/** The legacy `state` workload and what it holds, while one is configured. */
export interface LegacyWorkload {
  ref: WorkloadRef;
  input: LegacyInput;
  annotations: Record<string, string>;
}

/**
 * What the tick read that apply writes against, beside what plan judged: the decision carries it,
 * so that apply reads nothing of the observation.
 */
export interface TickRead {
  /** The store as read (without legacy values): what every write is decided against. */
  stored: Book;
  /** The book as plan judged it (legacy values included): what a given-back attempt restores. */
  judged: Book;
  /** The tick's clock (the store GET's `Date`), when its answer had one. */
  clock?: number;
  /** The legacy annotations to carry into the store with the first write (empty: none). */
  migration: Change;
  legacy?: LegacyWorkload;
  /** Every workload read, by workloadId: what Events are about (only that: see EventSubject). */
  objects: ReadonlyMap<string, EventSubject>;
}

/** A decision as apply carries it out: plan's, with what the tick read that it writes against. */
export interface DecisionToApply extends Decision {
  read: TickRead;
}
