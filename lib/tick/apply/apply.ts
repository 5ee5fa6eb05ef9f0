// Apply: carries out a plan's actions in order. Each action has its own failure policy, as
// follows: an uncounted streak or an unpersisted attempt stops the tick before any rollout; a
// failed streak clear or Event is only a warning; a failed rollout fails its group of images and
// the others go on; the reset never depends on the digest write.
import { annotationKeys } from "../../annotations.ts";
import type { Outcome } from "../../outcomes.ts";
import { mostSevere } from "../../outcomes.ts";
import type { SpanHandle } from "../../telemetry.ts";
import type { TickContext } from "../context.ts";
import type { Action, Decision, ImageVerdict, Reason, StateWrite } from "../model.ts";
import type { Observation } from "../observe.ts";
import { summarise } from "../plan/combine.ts";
import { pinRestored, recordDigests, reset } from "./record.ts";
import { rolloutGroup } from "./rollouts.ts";
import {
  baseAttrs,
  describeState,
  type Failure,
  isConflict,
  patchState,
  postEvent,
  type Run,
  refreshVersion,
  Stop,
} from "./state.ts";

export interface Applied {
  outcome: Outcome;
  reason: Reason;
  message: string;
  /** Every image's verdict as the tick ends (empty when the settled guard stopped it). */
  images: ImageVerdict[];
  /** A compare-and-swap lost to a concurrent write before anything irreversible: observe and plan again. */
  conflict?: boolean;
  skipStreak?: number;
}

export async function apply(
  d: Decision,
  obs: Observation,
  ctx: TickContext,
  root: SpanHandle,
): Promise<Applied> {
  const run: Run = {
    ctx,
    obs,
    root,
    rv: obs.state.metadata.resourceVersion,
    annotations: obs.state.metadata.annotations,
    verdicts: new Map(d.images.map((v) => [v.key, { ...v }])),
    groups: d.groups,
    failed: new Map(),
    started: new Set(),
    rolledOut: false,
    patched: [],
    skipStreak: d.skipStreak.before,
  };
  let stopped: Failure | undefined;
  try {
    for (const action of d.actions) await step(run, action);
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    if (err.conflict) return { ...err.failure, images: [], conflict: true };
    stopped = err.failure;
  }
  return result(d, run, stopped);
}

function result(d: Decision, run: Run, stopped: Failure | undefined): Applied {
  const images = d.images.map((v) => run.verdicts.get(v.key) as ImageVerdict);
  const skipStreak = run.skipStreak;
  if (images.length === 0) return { ...(stopped ?? d), images, skipStreak };
  const summary = summarise(images);
  if (!stopped) return { ...summary, images, skipStreak };
  const outcome = mostSevere([stopped.outcome, summary.outcome]);
  const reason = outcome === stopped.outcome ? stopped.reason : summary.reason;
  return { outcome, reason, message: `${stopped.message}; ${summary.message}`, images, skipStreak };
}

async function step(run: Run, a: Action): Promise<void> {
  const keys = annotationKeys(run.ctx.config.annotationPrefix);
  switch (a.type) {
    case "write-streak":
      await guarded(run, { [keys.skipStreak]: String(a.value) }, () => ({
        outcome: "error",
        reason: "streak_not_counted",
        what: `skip streak ${a.value}`,
      }));
      // The skip_streak gauge reports the streak as this tick left it, like attempt_count.
      run.skipStreak = a.value;
      return;
    case "clear-streak":
      return clearStreak(run, keys.skipStreak);
    case "write-state":
      return writeState(run, a);
    case "rollout":
      return rolloutGroup(run, a);
    case "reset":
      return reset(run, a.counts);
    case "record-digests":
      return recordDigests(run, a.digests, a.candidates);
    case "pin-restored":
      return pinRestored(run, a.images);
    case "event":
      return postEvent(run, a);
  }
}

/** A write guarded by resourceVersion; a lost race before any rollout sends the tick back to observe. */
async function guarded(
  run: Run,
  annotations: Record<string, string | null>,
  fail: () => { outcome: Outcome; reason: Reason; what: string },
) {
  try {
    await patchState(run, annotations, true);
  } catch (err) {
    const f = fail();
    if (isConflict(err) && !run.rolledOut)
      throw new Stop({ ...f, message: `${f.what}: state changed concurrently` }, true);
    const message = `cannot write ${f.what} to ${describeState(run)}: ${(err as Error).message}`;
    throw new Stop({ outcome: f.outcome, reason: f.reason, message });
  }
}

/**
 * The one write before any workload is touched: every due image's count + 1 with this tick's
 * traceparent, unresolved streaks, flap markers, the legacy keys' migration and first
 * observations. One compare-and-swap, so a concurrent tick's count is never overwritten.
 */
async function writeState(run: Run, w: StateWrite): Promise<void> {
  const { ctx } = run;
  const keys = annotationKeys(ctx.config.annotationPrefix);
  const annotations: Record<string, string | null> = { ...w.annotations };
  const traceparent = ctx.telemetry.rootTraceparent();
  for (const [key, n] of Object.entries(w.attempts)) {
    annotations[keys.image(key).attempt] = String(n);
    annotations[keys.image(key).traceparent] = traceparent;
  }
  const removalsOnly =
    Object.keys(w.attempts).length + w.streaks.length + w.flaps.length + w.firstSeen.length === 0;
  try {
    await guarded(run, annotations, () => writeFailure(w));
  } catch (err) {
    // Only removed streaks (images that resolved again): a leftover streak makes a later stale
    // verdict come early, while stopping here would stop every refresh.
    if (!(err instanceof Stop) || err.conflict || !removalsOnly) {
      if (err instanceof Stop && !err.conflict) holdDue(run, w, err.failure);
      throw err;
    }
    ctx.log.warn(`cannot remove unresolved streaks on ${describeState(run)}; going on`, {
      error: err.failure.message,
    });
    return;
  }
  for (const [key, n] of Object.entries(w.attempts)) {
    // The count stands until the reset removes it: a failed rollout leaves it, and so must the gauge.
    const v = run.verdicts.get(key) as ImageVerdict;
    v.attemptCount = n;
    v.lockedOut = n >= ctx.config.maxRefreshAttempts;
    run.root.addEvent("attempt", { "image_refresh.image": key, "image_refresh.attempt": n });
    ctx.telemetry.counter("image_refresh.attempts", 1, baseAttrs(run, key));
    if (w.repins.includes(key)) {
      run.root.addEvent("repin", { "image_refresh.image": key, "image_refresh.attempt": n });
      ctx.telemetry.counter("image_refresh.repins", 1, baseAttrs(run, key));
    }
    ctx.log.info(`refresh attempt ${n}/${ctx.config.maxRefreshAttempts} of ${key}`, {
      image: key,
      attempt: n,
    });
  }
}

/** Why the write before the rollouts failed, naming the most serious thing it carried. */
function writeFailure(w: StateWrite): { outcome: Outcome; reason: Reason; what: string } {
  if (w.streaks.length)
    return {
      outcome: "error",
      reason: "streak_not_counted",
      what: `the unresolved streak of ${w.streaks.join(", ")}`,
    };
  if (w.flaps.length)
    return {
      outcome: "error",
      reason: "flap_marker_not_written",
      what: `the flap marker of ${w.flaps.join(", ")}`,
    };
  const due = Object.keys(w.attempts);
  if (due.length)
    return {
      outcome: "held",
      reason: "attempt_not_persisted",
      what: `the refresh attempt of ${due.join(", ")}`,
    };
  return { outcome: "error", reason: "record_failed", what: `the first digest of ${w.firstSeen.join(", ")}` };
}

/** A count that could not be persisted means no rollout: every due image is held. */
function holdDue(run: Run, w: StateWrite, f: Failure): void {
  for (const key of Object.keys(w.attempts)) {
    const v = run.verdicts.get(key) as ImageVerdict;
    Object.assign(v, {
      outcome: "held",
      reason: "attempt_not_persisted",
      message: `no rollout of ${key}: ${f.message}`,
      short: "(attempt not persisted)",
    });
  }
}

async function clearStreak(run: Run, key: string): Promise<void> {
  try {
    await patchState(run, { [key]: null }, true);
    run.skipStreak = 0;
  } catch (err) {
    // A streak that could not be cleared only makes a later freeze come early; stopping the
    // tick here would stop every refresh instead, which is the failure this job exists to avoid.
    run.ctx.log.warn(`cannot clear the skip streak on ${describeState(run)}; going on`, {
      error: (err as Error).message,
    });
    // The next write needs the current resourceVersion; if even the re-read fails, that write
    // will meet its own conflict and the tick re-reads from the start.
    if (isConflict(err))
      await refreshVersion(run).catch((e: Error) =>
        run.ctx.log.warn(`cannot re-read ${describeState(run)} after the conflict`, { error: e.message }),
      );
  }
}
