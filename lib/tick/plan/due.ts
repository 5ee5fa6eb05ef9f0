// The refresh-attempt rules every due image goes through, a new build, a soaked candidate or a
// re-pin alike: an untrusted count holds, a count at the maximum locks out, another
// tick's claim stands, a target that can start no rollout holds. Pure, like all of verdict.ts.

import type { Config, ImageConfig } from "../../config.ts";
import type { EventReason } from "../../kube/events.ts";
import type { ImageBook } from "../../state/book.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, quoteForLog } from "../../state/values.ts";
import type { ImageVerdict, Observed, WorkloadRef } from "../model.ts";
import { lastAttempt } from "./last-attempt.ts";
import type { LiveImage } from "./live.ts";
import { signatureGate } from "./signature.ts";

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

/** A new judgement: `j` with `change` merged in; `j` itself is left as it was. */
export function amend(j: Judgement, change: Change): Judgement {
  const events = [...(j.events ?? []), ...(change.events ?? [])];
  return {
    ...j,
    ...change,
    verdict: { ...j.verdict, ...change.verdict },
    writes: { ...j.writes, ...change.writes },
    ...(events.length > 0 ? { events } : {}),
  };
}

/** A new judgement: `j` with the verdict's outcome, reason and message set. */
export function say(
  j: Judgement,
  outcome: ImageVerdict["outcome"],
  reason: ImageVerdict["reason"],
  message: string,
): Judgement {
  return { ...j, verdict: { ...j.verdict, outcome, reason, message } };
}

export interface DueInput {
  img: ImageConfig;
  b: ImageBook;
  c: Config;
  o: Observed;
  digest: string;
  live?: LiveImage;
  /** A re-pin to the recorded digest rather than a new build. */
  repin?: { only: string[]; managers: string[]; what: string; adoption?: boolean };
}

export function due(j: Judgement, { img, b, c, o, digest, live, repin }: DueInput): Judgement {
  const max = c.maxRefreshAttempts;
  const count = countOf(b.attempt);
  if (count === undefined) {
    const raw = b.attempt.kind === "untrusted" ? b.attempt.raw : "";
    const msg = `the store's ${IMAGE_KEYS.attempt.name(img.key)} is ${quoteForLog(raw)}, not a count; no rollout of ${img.key} until a human checks its workloads and runs \`image-refresh rearm ${img.key}\``;
    return say(j, "held", "attempt_untrusted", msg);
  }
  if (count >= max) return lockout(j, img, b, c, digest, count);
  // After the lockout check: a lockout is decided by the count alone,
  // also when another tick's write is what brought the count to the maximum.
  if (o.claimed?.includes(img.key)) {
    const msg = `another tick wrote refresh attempt ${count} of ${img.key} while this one was deciding; it owns this refresh, so this tick touches none of its workloads`;
    return say(j, "held", "attempt_claimed", msg);
  }
  // A patch that can start no rollout would only fail the wait and count an attempt.
  if (live && live.blocked.length > 0) {
    const msg = `refresh of ${img.key} is due but cannot start safely: ${live.blocked.join("; ")}`;
    return say(amend(j, { blocks: true }), "held", "target_unavailable", msg);
  }
  const signed = signatureGate(j, { img, b, c, o, digest, live, repin });
  if (signed.held) return signed.j;
  const next = amend(signed.j, {
    due: { digest, count: count + 1, ...(repin ? { repin: true, only: repin.only } : {}) },
    verdict: { short: `attempt ${count + 1}/${max}`, attempt: count + 1, attemptCount: 0, lockedOut: false },
  });
  if (repin?.adoption) {
    const msg = `adopting ${img.key}: its containers name the floating tag; pinning them to ${digest}, the build recorded at first observation (attempt ${count + 1}/${max})`;
    return say(amend(next, { verdict: { adopted: true } }), "refreshed", "pin_restored", msg);
  }
  if (repin) {
    const msg = `${repin.what}; re-pinning ${img.key} to ${digest} (reconcile: repin; attempt ${count + 1}/${max})`;
    return say(amend(next, { verdict: { restoredFrom: repin.managers } }), "refreshed", "pin_restored", msg);
  }
  const msg = `${img.key}: new build ${digest}; refresh attempt ${count + 1}/${max}`;
  return say(next, "refreshed", "digest_changed", msg);
}

export interface LockoutFacts {
  count: number;
  max: number;
  /** The build seen to fail last, if the bookkeeping may name one. */
  failed?: string;
  /** The build of a last attempt nobody saw end: then no build is called failed. */
  abandoned?: string;
  /** The registry's build now. */
  now: string;
}

/**
 * A lockout's advice tells the build that failed apart from a newer one: for the failed build,
 * `rearm` retries it and `reject` waits for the next; for a newer one, `rearm` tries it (and
 * `reject` would reject the failed build, not the newer one). An abandoned last attempt names no
 * failed build: the human checks the workloads and names the build to reject, if any.
 */
export function lockoutAdvice(key: string, f: LockoutFacts): string {
  const rearm = `\`image-refresh rearm ${key}\``;
  if (f.abandoned !== undefined)
    return `refresh of ${key} is held: ${f.count} rollout attempts in a row without a verified one (max ${f.max}); the last, of build ${f.abandoned}, was abandoned before anyone saw how it ended (its tick died, the answer to a write was lost, or the API refused the patch), so no build is called failed: check its workloads, then run ${rearm} to try again, or \`image-refresh reject ${key} DIGEST\` for a build you know is bad`;
  const held = `refresh of ${key} is held: ${f.count} failed rollouts in a row (max ${f.max})`;
  const failed = f.failed ?? f.now;
  if (failed === f.now)
    return `${held}, the last of build ${failed}; check its workloads, then run ${rearm} to try this build again or \`image-refresh reject ${key}\` to wait for the next one`;
  return `${held}, the last of build ${failed}; the registry now has a newer build ${f.now}: check its workloads, then run ${rearm} to try it (\`image-refresh reject ${key}\` would reject the failed build ${failed}, not the newer one)`;
}

function lockout(j: Judgement, img: ImageConfig, b: ImageBook, c: Config, digest: string, count: number) {
  const max = c.maxRefreshAttempts;
  const last = lastAttempt(b);
  const short = amend(j, { verdict: { short: `${count}/${max}` } });
  const msg = lockoutAdvice(img.key, {
    count,
    max,
    now: digest,
    ...(last.kind === "failed" ? { failed: last.digest } : {}),
    ...(last.kind === "abandoned" ? { abandoned: last.attempt.digest } : {}),
  });
  if (b.flap.kind === "absent") {
    const announced = amend(short, {
      flap: true,
      writes: { [IMAGE_KEYS.flap.name(img.key)]: String(count) },
      events: [{ reason: "RefreshLockedOut", note: msg }],
    });
    return say(announced, "locked_out", "flap_lockout", msg);
  }
  return say(short, "locked_out", "flap_lockout", msg);
}
