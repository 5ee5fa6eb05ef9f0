// What a tick says when it ends: the root span's outcome, the tick's counters, gauges and
// histogram, each image's verdict (its log line, span events, counters and gauges), and the
// tick's one outcome line.

import type { Outcome } from "../outcomes.ts";
import { exitCodeFor, logLevelFor } from "../outcomes.ts";
import type { SpanHandle } from "../telemetry.ts";
import { baseAttrs } from "./attributes.ts";
import type { TickContext } from "./context.ts";
import type { ImageVerdict, Reason } from "./model.ts";
import { refusedForSignature } from "./signatures.ts";

/** How a tick ended, as reported: its outcome and, when it got that far, each image's verdict. */
export interface Ended {
  outcome: Outcome;
  reason: Reason;
  message: string;
  images?: ImageVerdict[];
}

/** The tick's outcome, its metrics and its log line, after each image's. */
export function report(ctx: TickContext, root: SpanHandle, r: Ended, seconds: number): void {
  const { telemetry, log } = ctx;
  const code = exitCodeFor(r.outcome);
  for (const v of r.images ?? []) reportImage(ctx, root, v);
  const attrs = baseAttrs({ ctx });
  root.setAttributes({ ...attrs, "image_refresh.outcome": r.outcome, "image_refresh.reason": r.reason });
  if (code !== 0) root.setError(r.reason, r.message);
  telemetry.counter("image_refresh.ticks", 1, { ...attrs, "image_refresh.outcome": r.outcome });
  // Gauges every tick, zeros included: each process starts from nothing, so "frozen now" must be
  // a value, not a difference of counters. Without a read of the store there is no honest value.
  if (code === 0)
    telemetry.gauge("image_refresh.last_success_timestamp", Math.floor(ctx.now() / 1000), attrs);
  telemetry.histogram("image_refresh.tick.duration", seconds, {
    ...attrs,
    "image_refresh.outcome": r.outcome,
  });
  const line = `${r.outcome}: ${r.message}`;
  const fields = { outcome: r.outcome, reason: r.reason, dry_run: ctx.dryRun || undefined };
  log[logLevelFor(r.outcome)](line, fields);
}

/** One image's verdict: its log line, its span events and counters, and its gauges. */
function reportImage(ctx: TickContext, root: SpanHandle, v: ImageVerdict): void {
  const { telemetry, log, config } = ctx;
  const attrs = baseAttrs({ ctx }, v.key);
  const image = { "image_refresh.image": v.key };
  if (v.outcome === "locked_out") {
    root.addEvent("lockout", { ...image, "image_refresh.attempt": v.attemptCount ?? -1 });
    telemetry.counter("image_refresh.lockouts", 1, attrs);
  }
  if (v.outcome === "stale")
    root.addEvent("stale", { ...image, "image_refresh.unresolved_streak": v.unresolvedStreak ?? -1 });
  if (v.outcome === "paused") root.addEvent("pause", { ...image, "image_refresh.reason": v.reason });
  if (v.outcome === "skipped" || v.outcome === "frozen") telemetry.counter("image_refresh.skips", 1, attrs);
  if (v.outcome === "frozen")
    root.addEvent("freeze", { ...image, "image_refresh.skip_streak": v.skipStreak ?? -1 });
  if (v.skipStreak !== undefined) telemetry.gauge("image_refresh.skip_streak", v.skipStreak, attrs);
  if (v.frozen !== undefined) telemetry.gauge("image_refresh.frozen", v.frozen ? 1 : 0, attrs);
  // An untrusted counter has no honest value: a 0 there would tell a dashboard all is well.
  if (v.attemptCount !== undefined) {
    telemetry.gauge("image_refresh.attempt_count", v.attemptCount, attrs);
    telemetry.gauge("image_refresh.locked_out", v.attemptCount >= config.maxRefreshAttempts ? 1 : 0, attrs);
  }
  if (v.unresolvedStreak !== undefined)
    telemetry.gauge("image_refresh.unresolved_streak", v.unresolvedStreak, attrs);
  telemetry.gauge("image_refresh.paused", v.paused ? 1 : 0, attrs);
  // State, so a gauge: 1 while the registry's new build is refused for its signature.
  if (config.images.find((i) => i.key === v.key)?.verify)
    telemetry.gauge("image_refresh.build_refused", refusedForSignature(v.reason) ? 1 : 0, attrs);
  if (v.inSync !== undefined) telemetry.gauge("image_refresh.in_sync", v.inSync ? 1 : 0, attrs);
  if (v.verified)
    telemetry.gauge("image_refresh.last_verified_timestamp", Math.floor(ctx.now() / 1000), attrs);
  const fields = {
    image: v.key,
    outcome: v.outcome,
    reason: v.reason,
    digest: v.digest,
    // The attempt the message names ("refresh attempt 1/3"), not the counter after its reset (0).
    attempt: v.attempt ?? v.attemptCount,
  };
  for (const w of v.warnings ?? []) log.warn(w, fields);
  if (v.reason === "unchanged" || v.reason === "pinned") log.debug(v.message, fields);
  else log[logLevelFor(v.outcome)](v.message, fields);
}
