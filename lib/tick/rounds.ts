// A tick's rounds: observe → plan → apply. A lost compare-and-swap sends it back to observe (the
// registry is not asked again: its answer is memoised for the tick), at most MAX_ROUNDS times.

import { mark } from "../startup-timing.ts";
import { attemptCounts } from "../state/book.ts";
import { linkStories } from "../story.ts";
import type { SpanHandle } from "../telemetry.ts";
import { type Applied, apply } from "./apply/apply.ts";
import type { TickContext } from "./context.ts";
import type { Decision } from "./model.ts";
import { type Observation, observe, StoreUnreadable } from "./observe.ts";
import { regressionSuspects } from "./plan/regression.ts";
import { planWithSignatures } from "./signatures.ts";

const MAX_ROUNDS = 3;

/** How the rounds ended: apply's result, or why nothing was decided. */
export type Round = Omit<Applied, "images"> & {
  images?: Applied["images"];
  decision?: Decision;
  obs?: Observation;
};

/** Observes, plans and applies, again after a lost compare-and-swap. */
export async function decideAndApply(ctx: TickContext, root: SpanHandle): Promise<Round> {
  let first: Record<string, number> | undefined;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    let obs: Observation;
    try {
      obs = await observe(ctx, (o) => regressionSuspects(ctx.config, o));
    } catch (err) {
      // Only a failed read of the store is store_unreadable; anything else that escaped
      // observing (a bug, never a registry answer: those are per-image WARNINGs) is unexpected.
      if (err instanceof StoreUnreadable)
        return {
          outcome: "error",
          reason: "store_unreadable",
          message: `cannot read the store: ${err.message}`,
        };
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
    const counts = attemptCounts(
      obs.observed.book,
      ctx.config.images.map((i) => i.key),
    );
    if (first === undefined) {
      // Links this tick to the ticks that wrote the images' current attempts: each story one chain.
      linkStories(ctx.telemetry, obs.observed.book);
      first = counts;
    }
    // An image whose count went up since the first read was claimed by another tick (a manual
    // Job beside the scheduled one): that tick owns its refresh. Counting a second attempt and
    // re-sending its patches would make one rollout count twice towards the lockout.
    const claimed = Object.keys(counts).filter((k) => (counts[k] ?? 0) > (first?.[k] ?? 0));
    if (claimed.length) obs.observed.claimed = claimed;
    const decision = await planWithSignatures(ctx, obs.observed);
    mark("planned");
    ctx.log.debug(`plan: ${decision.outcome} (${decision.reason})`, {
      actions: decision.actions.map((a) => a.type),
    });
    // What apply needs of the observation travels in the decision: apply reads nothing else of it.
    const applied = await apply({ ...decision, read: obs.read }, ctx, root);
    if (!applied.conflict) return { ...applied, decision, obs };
    ctx.log.warn(`${applied.message}; reading it again (round ${round + 1}/${MAX_ROUNDS})`);
    if (round === MAX_ROUNDS)
      return { ...applied, decision, obs, message: `${applied.message} ${MAX_ROUNDS} times in a row` };
  }
  throw new Error("unreachable");
}
