// A tick's rounds: observe → plan → apply. A lost compare-and-swap sends it back to observe (the
// registry is not asked again: its answer is memoised for the tick), at most MAX_ROUNDS times.

import { mark } from "../startup-timing.ts";
import { linkStories } from "../story.ts";
import type { SpanHandle } from "../telemetry.ts";
import { type Applied, apply } from "./apply/apply.ts";
import type { TickContext } from "./context.ts";
import type { Decision, TickRead } from "./model.ts";
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
    const read = tickRead(obs);
    const counts = attemptCounts(ctx, obs);
    if (first === undefined) {
      linkStory(ctx, obs);
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
    const applied = await apply({ ...decision, read }, ctx, root);
    if (!applied.conflict) return { ...applied, decision, obs };
    ctx.log.warn(`${applied.message}; reading it again (round ${round + 1}/${MAX_ROUNDS})`);
    if (round === MAX_ROUNDS)
      return { ...applied, decision, obs, message: `${applied.message} ${MAX_ROUNDS} times in a row` };
  }
  throw new Error("unreachable");
}

/** What apply needs of the observation, carried in the decision: apply reads nothing else of it. */
function tickRead({ observed, stored, migration, legacy, objects }: Observation): TickRead {
  return {
    stored,
    judged: observed.book,
    ...(observed.clock !== undefined ? { clock: observed.clock } : {}),
    migration,
    ...(legacy ? { legacy } : {}),
    objects,
  };
}

/** Each image's trusted count (own or legacy), else 0: only a count that went up means a claim. */
function attemptCounts(ctx: TickContext, obs: Observation): Record<string, number> {
  const out: Record<string, number> = {};
  for (const img of ctx.config.images) {
    const c = obs.observed.book.images[img.key]?.attempt;
    out[img.key] = c?.kind === "trusted" ? c.value : 0;
  }
  return out;
}

/** Links this tick to the ticks that wrote the images' current attempts, so each story is one chain. */
function linkStory(ctx: TickContext, obs: Observation): void {
  linkStories(ctx.telemetry, obs.observed.book);
}
