// The tick's decision: a pure function of what was observed and the configuration. No I/O, no
// clock, no environment. Each image is judged on its own (verdict.ts), then the verdicts are
// combined (combine.ts); every branch is a row in plan.test.ts, plan.live.test.ts, plan.soak.test.ts or combine.test.ts.
import { type AnnotationKeys, annotationKeys, quoteForLog, readCounter } from "../../annotations.ts";
import type { Config } from "../../config.ts";
import { describeWorkload, distinctTargets, type WorkloadRef } from "../../workload.ts";
import type { Action, Decision, Observed } from "../model.ts";
import { combine } from "./combine.ts";
import { type Judgement, judgeImage } from "./verdict.ts";

export function plan(o: Observed, c: Config): Decision {
  const keys = annotationKeys(c.annotationPrefix);
  if (!o.state.settled) return planUnsettled(o, c, keys);
  return combine(o, c, judgeAll(o, c));
}

function judgeAll(o: Observed, c: Config): Map<string, Judgement> {
  return new Map(c.images.map((img) => [img.key, judgeImage(img, o, c)]));
}

function planUnsettled(o: Observed, c: Config, keys: AnnotationKeys): Decision {
  const streak = readCounter(o.state.annotations[keys.skipStreak]);
  const base = { images: [], groups: {} };
  if (streak.kind === "untrusted") {
    const message = `${keys.skipStreak} is ${quoteForLog(streak.raw)}, not a count, so this unsettled tick cannot be counted; remove the annotation to reset it`;
    return {
      ...base,
      outcome: "error",
      reason: "skip_streak_untrusted",
      message,
      actions: [],
      skipStreak: {},
    };
  }
  const previous = streak.kind === "trusted" ? streak.value : 0;
  const value = previous + 1;
  const actions: Action[] = [{ type: "write-streak", value }];
  const what = `${c.state.kind} ${c.state.namespace}/${c.state.name} is not settled (${o.state.settleMessage})`;
  if (value < c.maxSkipTicks) {
    const message = `${what}; skipping tick ${value}/${c.maxSkipTicks}`;
    return {
      ...base,
      outcome: "skipped",
      reason: "not_settled",
      message,
      actions,
      skipStreak: { before: previous, after: value },
    };
  }
  const message = `FROZEN: ${what} for ${value} ticks in a row (max ${c.maxSkipTicks}); no refresh of ${allTargets(c).join(", ")} until it settles`;
  if (previous < c.maxSkipTicks)
    actions.push({ type: "event", eventType: "Warning", reason: "RefreshFrozen", note: message });
  return {
    ...base,
    outcome: "frozen",
    reason: "skip_ceiling",
    message,
    actions,
    skipStreak: { before: previous, after: value },
  };
}

function allTargets(c: Config): string[] {
  return distinctTargets(c).map(describeWorkload);
}

/** The workloads to read before deciding: every target of every image that is not pinned. */
export function targetsToRead(_o: Observed, c: Config): WorkloadRef[] {
  return distinctTargets(c, "unpinned");
}
