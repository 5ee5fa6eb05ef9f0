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

export function say(
  j: Judgement,
  outcome: ImageVerdict["outcome"],
  reason: ImageVerdict["reason"],
  message: string,
) {
  Object.assign(j.verdict, { outcome, reason, message });
  return j;
}

export interface DueInput {
  img: ImageConfig;
  counters: ImageCounters;
  c: Config;
  o: Observed;
  digest: string;
  live?: LiveImage;
  /** A re-pin to the recorded digest rather than a new build. */
  repin?: { only: string[]; managers: string[]; what: string };
}

export function due(j: Judgement, { img, counters, c, o, digest, live, repin }: DueInput): Judgement {
  const max = c.maxRefreshAttempts;
  if (counters.attempt.kind === "untrusted") {
    const msg = `${counters.attemptFrom} is ${quoteForLog(counters.attempt.raw)}, not a count; no rollout of ${img.key} until a human checks its workloads and runs \`image-refresh rearm ${img.key}\``;
    return say(j, "held", "attempt_untrusted", msg);
  }
  const count = counters.attempt.kind === "trusted" ? counters.attempt.value : 0;
  if (count >= max) {
    j.verdict.short = `${count}/${max}`;
    const msg = `refresh of ${img.key} to ${digest} is held: ${count} failed rollouts in a row (max ${max}); check its workloads, then run \`image-refresh rearm ${img.key}\` to try this build again or \`image-refresh reject ${img.key}\` to wait for the next one`;
    if (counters.flap === undefined) {
      j.flap = true;
      j.writes[annotationKeys(c.annotationPrefix).image(img.key).flap] = String(count);
      j.event = { reason: "RefreshLockedOut", note: msg };
    }
    return say(j, "locked_out", "flap_lockout", msg);
  }
  // After the lockout check: a lockout is decided by the count alone,
  // also when another tick's write is what brought the count to the maximum.
  if (o.claimed?.includes(img.key)) {
    const msg = `another tick wrote refresh attempt ${count} of ${img.key} while this one was deciding; it owns this refresh, so this tick touches none of its workloads`;
    return say(j, "held", "attempt_claimed", msg);
  }
  // A patch that can start no rollout would only fail the wait and count an attempt.
  if (live && live.blocked.length > 0) {
    j.blocks = true;
    const msg = `refresh of ${img.key} is due but cannot start safely: ${live.blocked.join("; ")}`;
    return say(j, "held", "target_unavailable", msg);
  }
  j.due = { digest, count: count + 1, ...(repin ? { repin: true, only: repin.only } : {}) };
  j.verdict.short = `attempt ${count + 1}/${max}`;
  j.verdict.attemptCount = 0;
  j.verdict.lockedOut = false;
  if (repin) {
    j.verdict.restoredFrom = repin.managers;
    const msg = `${repin.what}; re-pinning ${img.key} to ${digest} (reconcile: repin; attempt ${count + 1}/${max})`;
    return say(j, "refreshed", "pin_restored", msg);
  }
  const msg = `${img.key}: new build ${digest}; refresh attempt ${count + 1}/${max}`;
  return say(j, "refreshed", "digest_changed", msg);
}
