// Apply: carries out a plan's actions in order. Each action has its own failure policy, as
// follows: an uncounted streak or an unpersisted attempt stops the tick before any rollout; a
// failed streak clear or Event is only a warning; a failed rollout fails its group of images and
// the others go on (groups roll out side by side, lanes.ts); the reset never depends on the digest write.
import type { Outcome } from "../../outcomes.ts";
import { mostSevere } from "../../outcomes.ts";
import { type Change, setField } from "../../state/change.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import type { SpanHandle } from "../../telemetry.ts";
import { baseAttrs } from "../attributes.ts";
import type { TickContext } from "../context.ts";
import type {
  Action,
  Decision,
  DecisionToApply,
  ImageVerdict,
  Reason,
  Rollout,
  StateWrite,
} from "../model.ts";
import { summarise } from "../plan/combine.ts";
import { rollOut } from "./lanes.ts";
import { pinRestored, recordDigests, reset } from "./record.ts";
import { recordRevert } from "./regression.ts";
import {
  describeStore,
  dropLegacy,
  type Failure,
  postEvent,
  type Run,
  Stop,
  StoreConflict,
  tickClock,
  writeBook,
} from "./state.ts";

export interface Applied {
  outcome: Outcome;
  reason: Reason;
  message: string;
  /** Every image's verdict as the tick ends (empty when the settled guard stopped it). */
  images: ImageVerdict[];
  /** A compare-and-swap lost to a concurrent write before anything irreversible: observe and plan again. */
  conflict?: boolean;
}

export async function apply(d: DecisionToApply, ctx: TickContext, root: SpanHandle): Promise<Applied> {
  const run: Run = {
    ctx,
    read: d.read,
    root,
    book: d.read.stored,
    pending: d.read.migration,
    unlabelled: false,
    verdicts: new Map(d.images.map((v) => [v.key, { ...v }])),
    groups: d.groups,
    failed: new Map(),
    started: new Set(),
    rolledOut: false,
    patched: [],
    attempts: {},
  };
  let stopped: Failure | undefined;
  try {
    // The rollouts, together: up to `parallelism` groups at once (lanes.ts).
    for (const p of phases(d.actions)) await (!Array.isArray(p) ? step(run, p) : rollOut(run, p));
    await migrateAlone(run);
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    if (err.conflict) return { ...err.failure, images: [], conflict: true };
    stopped = err.failure;
  }
  return result(d, run, stopped);
}

/**
 * A tick that wrote nothing still carries the legacy annotations into the store (then drops them
 * from the workload). A failure is a WARNING: the next tick reads them again.
 */
async function migrateAlone(run: Run): Promise<void> {
  try {
    if (Object.keys(run.pending).length > 0) await writeBook(run, {});
    else await dropLegacy(run);
  } catch (err) {
    run.ctx.log.warn(
      `cannot carry the legacy annotations into ${describeStore(run)}; the next tick retries`,
      {
        error: (err as Error).message,
      },
    );
  }
}

/** Actions in order, with each run of consecutive rollouts gathered into one step. */
export function phases(actions: readonly Action[]): Array<Exclude<Action, { type: "rollout" }> | Rollout[]> {
  const out: Array<Exclude<Action, { type: "rollout" }> | Rollout[]> = [];
  for (const a of actions) {
    if (a.type !== "rollout") out.push(a);
    else {
      const last = out.at(-1);
      if (Array.isArray(last)) last.push(a);
      else out.push([a]);
    }
  }
  return out;
}

function result(d: Decision, run: Run, stopped: Failure | undefined): Applied {
  const images = d.images.map((v) => run.verdicts.get(v.key) as ImageVerdict);
  if (images.length === 0) return { ...(stopped ?? d), images };
  const summary = summarise(images);
  if (!stopped) return { ...summary, images };
  const outcome = mostSevere([stopped.outcome, summary.outcome]);
  const reason = outcome === stopped.outcome ? stopped.reason : summary.reason;
  return { outcome, reason, message: `${stopped.message}; ${summary.message}`, images };
}

async function step(run: Run, a: Exclude<Action, { type: "rollout" }>): Promise<void> {
  switch (a.type) {
    case "write-state":
      return writeState(run, a);
    case "reset":
      return reset(run, a.counts);
    case "record-digests":
      return recordDigests(run, a.digests, a.candidates, a.also);
    case "pin-restored":
      return pinRestored(run, a.images);
    case "record-revert":
      return recordRevert(run, a.digests);
    case "event":
      return postEvent(run, a, a.regarding);
  }
}

/** A write guarded by resourceVersion; a lost race before any rollout sends the tick back to observe. */
async function guarded(
  run: Run,
  change: Change,
  fail: () => { outcome: Outcome; reason: Reason; what: string },
) {
  try {
    await writeBook(run, change);
  } catch (err) {
    const f = fail();
    if (err instanceof StoreConflict && !run.rolledOut)
      throw new Stop({ ...f, message: `${f.what}: the store changed concurrently` }, true);
    const message = `cannot write ${f.what} to ${describeStore(run)}: ${(err as Error).message}`;
    throw new Stop({ outcome: f.outcome, reason: f.reason, message });
  }
}

/**
 * The one write before any workload is touched: every due image's count + 1 with this tick's
 * traceparent and the build it tries, as an attempt `started` (so a tick killed mid-rollout still
 * names its build, and is told as abandoned, not failed: only a rollout seen to fail writes
 * `failed-<key>-digest`), the streaks, flap markers,
 * the legacy annotations' migration and first observations. One compare-and-swap, so a
 * concurrent tick's count is never overwritten.
 */
async function writeState(run: Run, w: StateWrite): Promise<void> {
  const { ctx } = run;
  const change: Record<string, string | null> = { ...w.change };
  const traceparent = ctx.telemetry.rootTraceparent();
  for (const [key, a] of Object.entries(w.attempts)) {
    change[IMAGE_KEYS.attempt.name(key)] = String(a.count);
    change[IMAGE_KEYS.traceparent.name(key)] = traceparent;
    const ending = a.regressed ? "regressed" : "started";
    const at = a.at ?? tickClock(run);
    Object.assign(change, setField(key, "last", { digest: a.digest, ending, at }));
    // A regression was seen before anything is touched: its build is named failed with its count.
    if (a.regressed) {
      change[IMAGE_KEYS.failed.name(key)] = a.digest;
      change[IMAGE_KEYS.regressed.name(key)] = a.digest;
    }
  }
  const removalsOnly =
    Object.keys(w.attempts).length + w.streaks.length + w.flaps.length + w.firstSeen.length === 0;
  try {
    await guarded(run, change, () => writeFailure(w));
  } catch (err) {
    // Only removed streaks (images that resolved again): a leftover streak makes a later stale
    // verdict come early, while stopping here would stop every refresh.
    if (!(err instanceof Stop) || err.conflict || !removalsOnly) {
      if (err instanceof Stop && !err.conflict) holdDue(run, w, err.failure);
      throw err;
    }
    ctx.log.warn(`cannot remove streaks or markers from ${describeStore(run)}; going on`, {
      error: err.failure.message,
    });
    return;
  }
  run.attempts = { ...w.attempts };
  for (const [key, { count: n, regressed }] of Object.entries(w.attempts)) {
    // The count stands until the reset removes it: a failed rollout leaves it, and so must the gauge.
    const v = run.verdicts.get(key) as ImageVerdict;
    v.attemptCount = n;
    v.lockedOut = n >= ctx.config.maxRefreshAttempts;
    run.root.addEvent("attempt", { "image_refresh.image": key, "image_refresh.attempt": n });
    ctx.telemetry.counter("image_refresh.attempts", 1, baseAttrs(run, key));
    if (regressed) {
      run.root.addEvent("regressed", { "image_refresh.image": key, "image_refresh.attempt": n });
      ctx.telemetry.counter("image_refresh.regressions", 1, baseAttrs(run, key));
    }
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
      what: `the streak of ${w.streaks.join(", ")}`,
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
