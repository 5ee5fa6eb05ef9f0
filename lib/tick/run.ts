// One tick: observe → plan → apply inside the root span, then the tick's metrics and its
// outcome line. A lost compare-and-swap sends it back to observe (the registry is not asked again).

import { annotationKeys, readCounter } from "../annotations.ts";
import type { Outcome } from "../outcomes.ts";
import { exitCodeFor } from "../outcomes.ts";
import type { SpanHandle, Telemetry } from "../telemetry.ts";
import { parseTraceparent } from "../telemetry.ts";
import { type Applied, apply, baseAttrs } from "./apply.ts";
import type { TickContext } from "./context.ts";
import type { Decision, Reason } from "./model.ts";
import { type Observation, observe, StateUnreadable } from "./observe.ts";
import { plan } from "./plan.ts";

export interface TickResult {
  outcome: Outcome;
  reason: Reason;
  message: string;
  decision?: Decision;
}

const MAX_ROUNDS = 3;

export async function runTick(ctx: TickContext): Promise<TickResult> {
  const started = ctx.now();
  const memo = memoise(ctx.resolve);
  // A dry run changes nothing, so it counts nothing and reports no state as if it had: its
  // spans (marked image_refresh.dry_run) show what it would have done; metrics stay truthful.
  const telemetry: Telemetry = ctx.dryRun
    ? { ...ctx.telemetry, counter() {}, gauge() {}, histogram() {} }
    : ctx.telemetry;
  const tickCtx: TickContext = { ...ctx, resolve: memo, telemetry };
  return ctx.telemetry.tick({ ...baseAttrs({ ctx }), "image_refresh.dry_run": ctx.dryRun }, async (root) => {
    // Anything unexpected still ends as an outcome, with its metrics and log line: a tick that
    // dies without saying so is the silent failure this job exists to prevent.
    const r: Round = await decideAndApply(tickCtx, root).catch((err: Error) => ({
      outcome: "error" as const,
      reason: "unexpected" as const,
      message: `unexpected error: ${err.message}`,
    }));
    report(tickCtx, root, r, (ctx.now() - started) / 1000);
    return { outcome: r.outcome, reason: r.reason, message: r.message, decision: r.decision };
  });
}

type Round = Applied & { decision?: Decision; obs?: Observation };

async function decideAndApply(ctx: TickContext, root: SpanHandle): Promise<Round> {
  const attemptKey = annotationKeys(ctx.config.annotationPrefix).attempt;
  let firstAttempt = 0;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    let obs: Observation;
    try {
      obs = await observe(ctx);
    } catch (err) {
      // Only a failed read of the state object is state_unreadable; anything else that escaped
      // observing (a bug, never a registry answer: those are per-image WARNINGs) is unexpected.
      if (err instanceof StateUnreadable)
        return { outcome: "error", reason: "state_unreadable", message: err.message };
      return {
        outcome: "error",
        reason: "unexpected",
        message: `unexpected error: ${(err as Error).message}`,
      };
    }
    // Stopped (SIGTERM, SIGINT, the tick's deadline) while observing: the registry answers are
    // aborts, not facts, so nothing may be decided from them, and the tick did not do its job.
    if (ctx.signal.aborted) {
      const why = (ctx.signal.reason as Error | undefined)?.message ?? "aborted";
      return {
        outcome: "error",
        reason: "stopped",
        message: `the tick was stopped before it could decide: ${why}`,
        obs,
      };
    }
    const attempt = countOf(obs.state.metadata.annotations[attemptKey]);
    if (round === 1) {
      linkStory(ctx, obs);
      firstAttempt = attempt;
    }
    const decision = plan(obs.observed, ctx.config);
    // Our attempt write lost to another tick's (a manual Job beside the scheduled one): that tick
    // owns this refresh. Counting a second attempt and re-sending its patches would make one
    // rollout count twice towards the lockout, so stand down without touching a workload.
    if (attempt > firstAttempt && decision.actions.some((a) => a.type === "persist-attempt")) {
      const message = `another tick wrote refresh attempt ${attempt} while this one was deciding; it owns this refresh, so this tick touches no workload`;
      return { outcome: "held", reason: "attempt_claimed", message, decision, obs, attemptCount: attempt };
    }
    ctx.log.debug(`plan: ${decision.outcome} (${decision.reason})`, {
      actions: decision.actions.map((a) => a.type),
    });
    const applied = await apply(decision, obs, ctx, root);
    if (!applied.conflict) return { ...applied, decision, obs };
    ctx.log.warn(`${applied.message}; reading it again (round ${round + 1}/${MAX_ROUNDS})`);
    if (round === MAX_ROUNDS)
      return { ...applied, decision, obs, message: `${applied.message} ${MAX_ROUNDS} times in a row` };
  }
  throw new Error("unreachable");
}

/** A trusted count, else 0: only a count that went up means another tick claimed the refresh. */
function countOf(raw: string | undefined): number {
  const c = readCounter(raw);
  return c.kind === "trusted" ? c.value : 0;
}

/** Links this tick to the tick that wrote the current attempt, so attempts and lockout form one chain. */
function linkStory(ctx: TickContext, obs: Observation): void {
  const keys = annotationKeys(ctx.config.annotationPrefix);
  const stored = obs.state.metadata.annotations[keys.traceparent];
  if (parseTraceparent(stored)) ctx.telemetry.linkRoot([stored as string]);
}

function report(ctx: TickContext, root: SpanHandle, r: Round, seconds: number): void {
  const { telemetry, log, config } = ctx;
  const attrs = baseAttrs({ ctx });
  const code = exitCodeFor(r.outcome);
  root.setAttributes({ "image_refresh.outcome": r.outcome, "image_refresh.reason": r.reason });
  if (code !== 0) root.setError(r.reason, r.message);
  const settled = r.obs?.observed.state.settled;
  if (settled === false) telemetry.counter("image_refresh.skips", 1, attrs);
  if (r.outcome === "locked_out") {
    root.addEvent("lockout", { "image_refresh.attempt": r.attemptCount ?? -1 });
    telemetry.counter("image_refresh.lockouts", 1, attrs);
  }
  if (r.outcome === "frozen") root.addEvent("freeze", { "image_refresh.skip_streak": r.skipStreak ?? -1 });
  telemetry.counter("image_refresh.ticks", 1, { ...attrs, "image_refresh.outcome": r.outcome });
  // Gauges every tick, zeros included: each process starts from nothing, so "locked out now"
  // must be a value, not a difference of counters. An untrusted counter has no honest value.
  if (r.attemptCount !== undefined) telemetry.gauge("image_refresh.attempt_count", r.attemptCount, attrs);
  if (r.skipStreak !== undefined) telemetry.gauge("image_refresh.skip_streak", r.skipStreak, attrs);
  // Nor has "locked out" without a trusted count, or "frozen" without a read of the state: a 0
  // there would tell a dashboard that an installation it cannot see is fine.
  if (r.attemptCount !== undefined)
    telemetry.gauge("image_refresh.locked_out", r.attemptCount >= config.maxRefreshAttempts ? 1 : 0, attrs);
  if (r.obs !== undefined) telemetry.gauge("image_refresh.frozen", r.outcome === "frozen" ? 1 : 0, attrs);
  if (code === 0)
    telemetry.gauge("image_refresh.last_success_timestamp", Math.floor(ctx.now() / 1000), attrs);
  telemetry.histogram("image_refresh.tick.duration", seconds, {
    ...attrs,
    "image_refresh.outcome": r.outcome,
  });
  const line = `${r.outcome}: ${r.message}`;
  const fields = { outcome: r.outcome, reason: r.reason, dry_run: ctx.dryRun || undefined };
  if (code !== 0) log.error(line, fields);
  else if (r.outcome === "locked_out") log.warn(line, fields);
  else log.info(line, fields);
}

function memoise(resolve: TickContext["resolve"]): TickContext["resolve"] {
  let cached: ReturnType<TickContext["resolve"]> | undefined;
  return (repos) => {
    cached ??= resolve(repos);
    return cached;
  };
}
