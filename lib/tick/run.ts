// One tick: its rounds (observe → plan → apply, rounds.ts) inside the root span, then the tick's
// metrics and its outcome line (report.ts). The registry is asked once per tick, whatever the rounds.

import type { Outcome } from "../outcomes.ts";
import { mark } from "../startup-timing.ts";
import type { Telemetry } from "../telemetry.ts";
import type { TickContext } from "./context.ts";
import type { Decision, Reason } from "./model.ts";
import { report } from "./report.ts";
import { decideAndApply, type Round } from "./rounds.ts";

export interface TickResult {
  outcome: Outcome;
  reason: Reason;
  message: string;
  decision?: Decision;
}

export async function runTick(ctx: TickContext): Promise<TickResult> {
  const started = ctx.now();
  const memo = memoise(ctx.resolve);
  // A dry run changes nothing, so it counts nothing and reports no state as if it had: its
  // spans (marked image_refresh.dry_run) show what it would have done; metrics stay truthful.
  const telemetry: Telemetry = ctx.dryRun
    ? { ...ctx.telemetry, counter() {}, gauge() {}, histogram() {} }
    : ctx.telemetry;
  const tickCtx: TickContext = { ...ctx, resolve: memo, telemetry };
  // The installation joins the root span with the outcome (report.ts).
  return ctx.telemetry.tick({ "image_refresh.dry_run": ctx.dryRun }, async (root) => {
    // Anything unexpected still ends as an outcome, with its metrics and log line: a tick that
    // dies without saying so is the silent failure this job exists to prevent.
    const r: Round = await decideAndApply(tickCtx, root).catch((err: Error) => ({
      outcome: "error" as const,
      reason: "unexpected" as const,
      message: `unexpected error: ${err.message}`,
    }));
    mark("applied");
    report(tickCtx, root, r, (ctx.now() - started) / 1000);
    mark("reported");
    return { outcome: r.outcome, reason: r.reason, message: r.message, decision: r.decision };
  });
}

function memoise(resolve: TickContext["resolve"]): TickContext["resolve"] {
  let cached: ReturnType<TickContext["resolve"]> | undefined;
  return (repos, opts) => {
    cached ??= resolve(repos, opts);
    return cached;
  };
}
