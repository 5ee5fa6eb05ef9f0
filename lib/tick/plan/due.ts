// The refresh-attempt rules every due image goes through, a new build, a soaked candidate or a
// re-pin alike: an untrusted count holds, a count at the maximum locks out, another
// tick's claim stands, a target that can start no rollout holds. Pure, like all of verdict.ts.

import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, quoteForLog } from "../../state/values.ts";
import type { DueInput } from "./case.ts";
import { amend, type Judgement, say } from "./judgement.ts";
import { lastAttempt } from "./last-attempt.ts";
import { signatureGate } from "./signature.ts";

export function due(judgement: Judgement, { img, b, c, o, digest, live, repin }: DueInput): Judgement {
  const max = c.maxRefreshAttempts;
  const count = countOf(b.attempt);
  if (count === undefined) {
    const raw = b.attempt.kind === "untrusted" ? b.attempt.raw : "";
    const msg = `the store's ${IMAGE_KEYS.attempt.name(img.key)} is ${quoteForLog(raw)}, not a count; no rollout of ${img.key} until a human checks its workloads and runs \`image-refresh rearm ${img.key}\``;
    return say(judgement, { outcome: "held", reason: "attempt_untrusted", message: msg });
  }
  if (count >= max) return lockout(judgement, { img, b, c, digest, count });
  // After the lockout check: a lockout is decided by the count alone,
  // also when another tick's write is what brought the count to the maximum.
  if (o.claimed?.includes(img.key)) {
    const msg = `another tick wrote refresh attempt ${count} of ${img.key} while this one was deciding; it owns this refresh, so this tick touches none of its workloads`;
    return say(judgement, { outcome: "held", reason: "attempt_claimed", message: msg });
  }
  // A patch that can start no rollout would only fail the wait and count an attempt.
  if (live && live.blocked.length > 0) {
    const msg = `refresh of ${img.key} is due but cannot start safely: ${live.blocked.join("; ")}`;
    return say(amend(judgement, { blocks: true }), {
      outcome: "held",
      reason: "target_unavailable",
      message: msg,
    });
  }
  const signed = signatureGate(judgement, { img, b, c, o, digest, live, repin });
  if (signed.held) return signed.judgement;
  const next = amend(signed.judgement, {
    due: { digest, count: count + 1, ...(repin ? { repin: true, only: repin.only } : {}) },
    verdict: { short: `attempt ${count + 1}/${max}`, attempt: count + 1, attemptCount: 0, lockedOut: false },
  });
  if (repin?.adoption) {
    const msg = `adopting ${img.key}: its containers name the floating tag; pinning them to ${digest}, the build recorded at first observation (attempt ${count + 1}/${max})`;
    return say(amend(next, { verdict: { adopted: true } }), {
      outcome: "refreshed",
      reason: "pin_restored",
      message: msg,
    });
  }
  if (repin) {
    const msg = `${repin.what}; re-pinning ${img.key} to ${digest} (reconcile: repin; attempt ${count + 1}/${max})`;
    return say(amend(next, { verdict: { restoredFrom: repin.managers } }), {
      outcome: "refreshed",
      reason: "pin_restored",
      message: msg,
    });
  }
  const msg = `${img.key}: new build ${digest}; refresh attempt ${count + 1}/${max}`;
  return say(next, { outcome: "refreshed", reason: "digest_changed", message: msg });
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
export function lockoutAdvice(key: string, facts: LockoutFacts): string {
  const rearm = `\`image-refresh rearm ${key}\``;
  if (facts.abandoned !== undefined)
    return `refresh of ${key} is held: ${facts.count} rollout attempts in a row without a verified one (max ${facts.max}); the last, of build ${facts.abandoned}, was abandoned before anyone saw how it ended (its tick died, the answer to a write was lost, or the API refused the patch), so no build is called failed: check its workloads, then run ${rearm} to try again, or \`image-refresh reject ${key} DIGEST\` for a build you know is bad`;
  const held = `refresh of ${key} is held: ${facts.count} failed rollouts in a row (max ${facts.max})`;
  const failed = facts.failed ?? facts.now;
  if (failed === facts.now)
    return `${held}, the last of build ${failed}; check its workloads, then run ${rearm} to try this build again or \`image-refresh reject ${key}\` to wait for the next one`;
  return `${held}, the last of build ${failed}; the registry now has a newer build ${facts.now}: check its workloads, then run ${rearm} to try it (\`image-refresh reject ${key}\` would reject the failed build ${failed}, not the newer one)`;
}

/** The count reached the maximum: the image is locked out, announced once (the flap marker). */
function lockout(
  judgement: Judgement,
  { img, b, c, digest, count }: Pick<DueInput, "img" | "b" | "c" | "digest"> & { count: number },
) {
  const max = c.maxRefreshAttempts;
  const last = lastAttempt(b);
  const short = amend(judgement, { verdict: { short: `${count}/${max}` } });
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
    return say(announced, { outcome: "locked_out", reason: "flap_lockout", message: msg });
  }
  return say(short, { outcome: "locked_out", reason: "flap_lockout", message: msg });
}
