// The settled guard, per image: an image one of whose targets is not settled, by
// kubectl's rules, is not touched this tick, and neither is an image that shares that workload
// (combine.ts holds it). Its `skip-streak-<key>` counts the ticks in a row; at maxSkipTicks the
// image is frozen, with one Warning Event about the workload that does not settle. Every other
// image goes on. Pure.

import type { ImageConfig } from "../../config.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, quoteForLog } from "../../state/values.ts";
import type { Observed, WorkloadRef } from "../model.ts";
import { describeWorkload, workloadId } from "../model.ts";
import type { ImageCase } from "./case.ts";
import { amend, type Judgement, say } from "./judgement.ts";
import { regressed } from "./regression.ts";

/** The image's targets that were read and are not settled, with what kubectl would say. */
export function unsettled(
  img: ImageConfig,
  observed: Observed,
): Array<{ ref: WorkloadRef; message: string }> {
  const out = new Map<string, { ref: WorkloadRef; message: string }>();
  for (const t of img.targets) {
    const w = observed.workloads?.[workloadId(t)];
    if (w?.found && !w.settled)
      out.set(workloadId(t), {
        ref: { kind: t.kind, namespace: t.namespace, name: t.name },
        message: w.settleMessage,
      });
  }
  return [...out.values()];
}

/**
 * A streak as `n/max`, never past its max: a frozen or stale image keeps counting its ticks (the
 * message says how many), but `frozen 9/8` would read as a ceiling that did not hold.
 */
export function ofMax(count: number, max: number): string {
  return `${Math.min(count, max)}/${max}`;
}

/** The judgement after the guard, and whether the guard holds the image (`held`). */
export function settledGuard(given: Judgement, imageCase: ImageCase): { j: Judgement; held: boolean } {
  const { img, b, o } = imageCase;
  const waiting = unsettled(img, o);
  // A settled image's streak is removed (a failed removal is only a warning).
  const settled = waiting.length === 0;
  const writes = settled && b.skip.kind !== "absent" ? { [IMAGE_KEYS.skip.name(img.key)]: null } : {};
  const before = settled ? amend(given, { writes, verdict: { skipStreak: 0, frozen: false } }) : given;
  // Not settled: skipped, or frozen at the ceiling, unless the recorded build regressed.
  const skipped = settled ? undefined : unsettledVerdict(amend(given, { blocks: true }), imageCase, waiting);
  // A workload that looks settled may still run a build that failed since its verification; and
  // a regression is not a skip: the recorded build's own pods failing is a failed attempt.
  const regression = regressed(before, imageCase);
  if (regression) return { j: regression, held: true };
  return skipped ? { j: skipped, held: true } : { j: before, held: false };
}

function unsettledVerdict(
  judgement: Judgement,
  { img, b, c }: ImageCase,
  waiting: Array<{ ref: WorkloadRef; message: string }>,
): Judgement {
  const name = IMAGE_KEYS.skip.name(img.key);
  const first = waiting[0] as { ref: WorkloadRef; message: string };
  const what = `${describeWorkload(first.ref)} not settled (${first.message})`;
  if (b.skip.kind === "untrusted") {
    const msg = `${img.key}: ${what}, and the store's ${name} is ${quoteForLog(b.skip.raw)}, not a count, so this skip cannot be counted; remove that key to reset it`;
    return say(judgement, { outcome: "error", reason: "skip_streak_untrusted", message: msg });
  }
  const previous = countOf(b.skip) ?? 0;
  const n = previous + 1;
  const counted = amend(judgement, {
    writes: { [name]: String(n) },
    countsStreak: true,
    verdict: { skipStreak: n, short: ofMax(n, c.maxSkipTicks), frozen: n >= c.maxSkipTicks },
  });
  if (n < c.maxSkipTicks)
    return say(counted, {
      outcome: "skipped",
      reason: "not_settled",
      message: `${img.key}: ${what}, skip ${n}/${c.maxSkipTicks}`,
    });
  const msg = `FROZEN: ${img.key}: ${what} for ${n} ticks in a row (max ${c.maxSkipTicks}); no refresh of ${img.key} until it settles`;
  const event = { reason: "RefreshFrozen" as const, note: msg, regarding: [first.ref] };
  return say(previous < c.maxSkipTicks ? amend(counted, { events: [event] }) : counted, {
    outcome: "frozen",
    reason: "skip_ceiling",
    message: msg,
  });
}
