// `status` tells what happened apart from what will happen: the last attempt in the past tense
// (its build, when, how it ended), the next tick's verdict in the future tense. The next tick's
// verdict is a forecast: a refresh is "due", never "refreshed", until a tick has done it.
import type { Outcome } from "../outcomes.ts";
import { type Attempt, type Ending, seenToFail, stamp } from "../state/values.ts";
import type { ImageVerdict } from "../tick/index.ts";

/** The headline's word for the next tick's verdict: a state, never a deed not yet done. */
const HEADLINE: Record<Outcome, string> = {
  error: "ERROR",
  failed: "FAILING",
  frozen: "FROZEN",
  stale: "STALE",
  held: "HELD",
  locked_out: "LOCKED_OUT",
  paused: "PAUSED",
  pending: "PENDING",
  drifted: "DRIFTED",
  unresolved: "UNRESOLVED",
  skipped: "UNSETTLED",
  refreshed: "REFRESH DUE",
  recorded: "FIRST OBSERVATION",
  noop: "NOOP",
};

export function headline(outcome: Outcome): string {
  return HEADLINE[outcome];
}

/** What the next tick will do, in the future tense. */
export function forecast(v: Pick<ImageVerdict, "outcome" | "reason" | "digest" | "short">): string {
  const d = v.digest ?? "the registry's build";
  switch (v.outcome) {
    case "refreshed":
      return v.reason === "pin_restored"
        ? `the next tick re-pins the containers to ${d} (${v.short ?? "a counted attempt"})`
        : `the next tick rolls out ${d} (${v.short ?? "a counted attempt"})`;
    case "recorded":
      return `the next tick records ${d} and touches no workload`;
    case "noop":
      return "the next tick will have nothing to do";
    case "skipped":
      return "the next tick will skip it: a target is not settled";
    case "pending":
      return "the next tick will wait: the new build has not been seen for minimumAge yet";
    case "paused":
      return "the next tick will leave it alone while it is paused";
    case "drifted":
    case "unresolved":
      return `the next tick will report it ${v.outcome} and exit 0`;
    default:
      return `the next tick will report it ${v.outcome} and exit 1`;
  }
}

const ENDED: Record<Ending, string> = {
  started:
    "started and was not seen to end: abandoned (its tick died or was stopped), unless a tick is rolling it out right now; no build is called failed",
  verified: "rolled out and was verified",
  failed: "failed: its rollout did not settle (no revert was recorded)",
  reverted: "failed: its rollout did not settle, and it was reverted to the images the workloads had before",
  revert_failed: "failed: its rollout did not settle, and the revert did not settle either",
  regressed: "failed after it had been verified (regressed)",
  refused: "was refused by the API server before anything changed: not counted against the build",
  interrupted:
    "was interrupted before it could be judged (the API failed, or the answer to a write was lost): abandoned, no build is called failed",
};

/** The last attempt in the past tense: `build sha256:… at <time>: failed: …, and it was reverted`. */
export function pastTense(a: Attempt): string {
  return `build ${a.digest} at ${stamp(a.at)} ${ENDED[a.ending]}`;
}

/** A last attempt whose build was seen to fail and still counts: a finding, like the tick's exit 1. */
export const failedAndCounting = (a: Attempt | undefined, count: number | undefined): boolean =>
  a !== undefined && seenToFail(a.ending) && (count ?? 0) > 0;
