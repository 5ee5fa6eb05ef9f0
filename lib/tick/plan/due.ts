// The refresh-attempt rules every due image goes through, a new build, a soaked candidate or a
// re-pin alike: an untrusted count holds, a count at the maximum locks out, another
// tick's claim stands, a target that can start no rollout holds. Pure, like all of verdict.ts.
import { annotationKeys, type ImageCounters, quoteForLog } from "../../annotations.ts";
import type { Config, ImageConfig } from "../../config.ts";
import type { EventReason } from "../../kube/events.ts";
import type { ImageVerdict, Observed } from "../model.ts";
import type { LiveImage } from "./live.ts";

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
  };
  /** This image holds every workload it has a container in (lockout, untrusted count, pause). */
  blocks: boolean;
  /** Annotation writes this image needs before any rollout (streaks, flap marker). */
  writes: Record<string, string | null>;
  /** Its unresolved streak goes up this tick (an uncounted streak fails the tick). */
  countsStreak: boolean;
  flap: boolean;
  firstSeen?: string;
  event?: { reason: EventReason; note: string };
}

/** What a verdict helper decides beyond the verdict's words: verdict fields and writes are merged, the rest replaced. */
export type Change = Partial<Omit<Judgement, "verdict" | "writes">> & {
  verdict?: Partial<ImageVerdict>;
  writes?: Judgement["writes"];
};

/** A new judgement with `change` applied; `j` itself is left as it was. */
export function amend(j: Judgement, change: Change): Judgement {
  return {
    ...j,
    ...change,
    verdict: { ...j.verdict, ...change.verdict },
    writes: { ...j.writes, ...change.writes },
  };
}

/** The verdict a helper reaches: outcome, reason and sentence, with what else it decided. */
export function say(
  j: Judgement,
  v: Pick<ImageVerdict, "outcome" | "reason" | "message">,
  also: Change = {},
): Judgement {
  return amend(j, { ...also, verdict: { ...also.verdict, ...v } });
}

export interface DueInput {
  /** The judgement so far; the helper returns a new one. */
  j: Judgement;
  img: ImageConfig;
  counters: ImageCounters;
  c: Config;
  o: Observed;
  digest: string;
  live?: LiveImage;
  /** A re-pin to the recorded digest rather than a new build. */
  repin?: { only: string[]; managers: string[]; what: string };
}

export function due({ j, img, counters, c, o, digest, live, repin }: DueInput): Judgement {
  const max = c.maxRefreshAttempts;
  if (counters.attempt.kind === "untrusted") {
    const message = `${counters.attemptFrom} is ${quoteForLog(counters.attempt.raw)}, not a count; no rollout of ${img.key} until a human checks its workloads and runs \`image-refresh rearm ${img.key}\``;
    return say(j, { outcome: "held", reason: "attempt_untrusted", message });
  }
  const count = counters.attempt.kind === "trusted" ? counters.attempt.value : 0;
  if (count >= max) {
    const message = `refresh of ${img.key} to ${digest} is held: ${count} failed rollouts in a row (max ${max}); check its workloads, then run \`image-refresh rearm ${img.key}\` to try this build again or \`image-refresh reject ${img.key}\` to wait for the next one`;
    const announce: Change =
      counters.flap === undefined
        ? {
            flap: true,
            writes: { [annotationKeys(c.annotationPrefix).image(img.key).flap]: String(count) },
            event: { reason: "RefreshLockedOut", note: message },
          }
        : {};
    return say(
      j,
      { outcome: "locked_out", reason: "flap_lockout", message },
      { ...announce, verdict: { short: `${count}/${max}` } },
    );
  }
  // After the lockout check: a lockout is decided by the count alone, also when another tick's
  // write is what brought the count to the maximum.
  if (o.claimed?.includes(img.key)) {
    const message = `another tick wrote refresh attempt ${count} of ${img.key} while this one was deciding; it owns this refresh, so this tick touches none of its workloads`;
    return say(j, { outcome: "held", reason: "attempt_claimed", message });
  }
  // A patch that can start no rollout would only fail the wait and count an attempt.
  if (live && live.blocked.length > 0) {
    const message = `refresh of ${img.key} is due but cannot start safely: ${live.blocked.join("; ")}`;
    return say(j, { outcome: "held", reason: "target_unavailable", message }, { blocks: true });
  }
  const next: Change = {
    due: { digest, count: count + 1, ...(repin ? { repin: true, only: repin.only } : {}) },
    verdict: {
      short: `attempt ${count + 1}/${max}`,
      attempt: count + 1,
      attemptCount: 0,
      lockedOut: false,
      ...(repin ? { restoredFrom: repin.managers } : {}),
    },
  };
  if (repin) {
    const message = `${repin.what}; re-pinning ${img.key} to ${digest} (reconcile: repin; attempt ${count + 1}/${max})`;
    return say(j, { outcome: "refreshed", reason: "pin_restored", message }, next);
  }
  const message = `${img.key}: new build ${digest}; refresh attempt ${count + 1}/${max}`;
  return say(j, { outcome: "refreshed", reason: "digest_changed", message }, next);
}
