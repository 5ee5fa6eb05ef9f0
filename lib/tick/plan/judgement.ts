// One image's judgement as the verdict steps pass it on: its verdict, the refresh it makes due,
// the store writes and Events it needs. A step never changes the judgement it is given: `amend`
// merges a change into a new one, `say` sets what the verdict says. Pure.

import type { EventReason } from "../../kube/events.ts";
import type { ImageVerdict, WorkloadRef } from "../model.ts";

export interface Judgement {
  verdict: ImageVerdict;
  /**
   * A refresh is due to this digest, if nothing else holds it (isolation). A re-pin (`repin`)
   * patches only the containers in `only` (`<workloadId>/<container>`), the ones not on the pin.
   */
  due?: {
    digest: string;
    count: number;
    repin?: boolean;
    only?: string[];
    /** minimumAge: `candidates-<key>` as the write that records this rollout leaves it (null: removed). */
    candidates?: string | null;
    /**
     * A regression: `failed` is the verified build whose pods failed (the attempt's build);
     * `digest` is the build to go back to, rolled out only when `back`. `counted: false` is a
     * rejected build rolled back: a revert, not an attempt, so no count is written. `at`: when the
     * regression was seen (the latest restart it counted, if later than the tick's clock).
     */
    regression?: { failed: string; back: boolean; counted?: false; at?: number };
  };
  /** This image holds every workload it has a container in (lockout, untrusted count, pause). */
  blocks: boolean;
  /** Store writes this image needs before any rollout (streaks, flap marker). */
  writes: Record<string, string | null>;
  /** Its unresolved streak goes up this tick (an uncounted streak fails the tick). */
  countsStreak: boolean;
  flap: boolean;
  firstSeen?: string;
  /** A first observation that found containers on the floating tag: the next re-pin adopts them. */
  adopt?: boolean;
  /**
   * Warning Events, each about the image's targets unless `regarding` names the workloads. One
   * tick can reach two transitions of one image (stale and frozen): each is announced.
   */
  events?: ImageEvent[];
}

export type ImageEvent = { reason: EventReason; note: string; regarding?: WorkloadRef[] };

/**
 * A change to a judgement: its verdict and writes are merged into the old ones, its events added
 * after the old ones, the rest replaced.
 */
export type Change = Partial<Omit<Judgement, "verdict" | "writes">> & {
  verdict?: Partial<ImageVerdict>;
  writes?: Judgement["writes"];
};

/** A new judgement: `judgement` with `change` merged in; `judgement` itself is left as it was. */
export function amend(judgement: Judgement, change: Change): Judgement {
  const events = [...(judgement.events ?? []), ...(change.events ?? [])];
  return {
    ...judgement,
    ...change,
    verdict: { ...judgement.verdict, ...change.verdict },
    writes: { ...judgement.writes, ...change.writes },
    ...(events.length > 0 ? { events } : {}),
  };
}

/** What a verdict says: its outcome, its named reason and the message for humans. */
export type Said = Pick<ImageVerdict, "outcome" | "reason" | "message">;

/** A new judgement: `judgement` with the verdict's outcome, reason and message set. */
export function say(judgement: Judgement, { outcome, reason, message }: Said): Judgement {
  return { ...judgement, verdict: { ...judgement.verdict, outcome, reason, message } };
}
