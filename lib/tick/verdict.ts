// One image's verdict from what was observed: a small pure function in the manner of Flux's
// shouldScan. Observed state in, verdict and named reason out; the writes it needs come back as
// data. Combining the verdicts (isolation, which writes travel together) is combine.ts's job.
import { annotationKeys, type ImageCounters, imageCounters, quoteForLog } from "../annotations.ts";
import type { Config, ImageConfig } from "../config.ts";
import type { ImageVerdict, Observed } from "./model.ts";

export interface Judgement {
  verdict: ImageVerdict;
  /** A refresh is due to this digest, if nothing else holds it (isolation, targets). */
  due?: { digest: string; count: number };
  /** This image holds every workload it has a container in (lockout, untrusted count, pause). */
  blocks: boolean;
  /** Annotation writes this image needs before any rollout (streaks, flap marker). */
  writes: Record<string, string | null>;
  /** Its unresolved streak goes up this tick (an uncounted streak fails the tick). */
  countsStreak: boolean;
  flap: boolean;
  firstSeen?: string;
  event?: { reason: string; note: string };
}

export function judgeImage(img: ImageConfig, o: Observed, c: Config): Judgement {
  const a = o.state.annotations;
  const keys = annotationKeys(c.annotationPrefix).image(img.key);
  const counters = imageCounters(a, c.annotationPrefix, img.key);
  const count = counters.attempt.kind === "trusted" ? counters.attempt.value : 0;
  const lockedOut = counters.attempt.kind === "trusted" && count >= c.maxRefreshAttempts;
  const base: ImageVerdict = {
    key: img.key,
    repository: img.repository,
    outcome: "noop",
    reason: "unchanged",
    message: "",
    attemptCount: counters.attempt.kind === "untrusted" ? undefined : count,
    unresolvedStreak: 0,
    lockedOut: counters.attempt.kind === "untrusted" ? undefined : lockedOut,
    paused: false,
    verified: false,
  };
  const blocks = lockedOut || counters.attempt.kind === "untrusted";
  const j: Judgement = { verdict: base, blocks, writes: {}, countsStreak: false, flap: false };
  if (img.pinned) return say(j, "noop", "pinned", `${img.key} is pinned: never resolved, never touched`);
  const seen = o.digests?.[img.key];
  if (!seen?.ok) return unresolved(j, img, counters, c, seen?.ok === false ? seen : undefined);
  if (a[keys.unresolved] !== undefined) j.writes[keys.unresolved] = null;
  const recorded = a[keys.digest];
  const L = seen.digest;
  j.verdict.digest = L;
  if (recorded === undefined) {
    j.firstSeen = L;
    return say(j, "recorded", "first_observation", `first observation of ${img.key}: ${L}`);
  }
  if (counters.rejected === L) {
    j.blocks = true;
    j.verdict.paused = true;
    const msg = `${img.key}: the registry's ${L} was rejected by a human; waiting for the next build of ${img.repository}:${c.tag}`;
    return say(j, "paused", "build_rejected", msg);
  }
  if (recorded === L) {
    j.verdict.verified = true;
    return say(j, "noop", "unchanged", `${img.key} is on ${L}`);
  }
  return due(j, img, counters, c, o, L);
}

function say(
  j: Judgement,
  outcome: ImageVerdict["outcome"],
  reason: ImageVerdict["reason"],
  message: string,
) {
  Object.assign(j.verdict, { outcome, reason, message });
  return j;
}

function unresolved(
  j: Judgement,
  img: ImageConfig,
  counters: ImageCounters,
  c: Config,
  failure: { failure: string; message: string } | undefined,
): Judgement {
  const keys = annotationKeys(c.annotationPrefix).image(img.key);
  const why = failure ? `${failure.failure}: ${failure.message}` : "not resolved";
  if (counters.unresolved.kind === "untrusted") {
    j.verdict.unresolvedStreak = undefined;
    const msg = `${img.key} could not be resolved (${why}) and ${keys.unresolved} is ${quoteForLog(counters.unresolved.raw)}, not a count; remove the annotation to reset it`;
    return say(j, "error", "unresolved_streak_untrusted", msg);
  }
  const previous = counters.unresolved.kind === "trusted" ? counters.unresolved.value : 0;
  const n = previous + 1;
  j.writes[keys.unresolved] = String(n);
  j.countsStreak = true;
  j.verdict.unresolvedStreak = n;
  j.verdict.short = `${n}/${c.maxUnresolvedTicks} (${failure?.failure ?? "not resolved"})`;
  const what = `cannot resolve ${img.repository}:${c.tag} (${why})`;
  if (n < c.maxUnresolvedTicks)
    return say(
      j,
      "unresolved",
      "unresolved",
      `${what}; unresolved ${n}/${c.maxUnresolvedTicks} ticks in a row`,
    );
  const msg = `STALE: ${what} for ${n} ticks in a row (max ${c.maxUnresolvedTicks}); ${img.key} is not being refreshed: check the repository, the tag, the registry's CA and the pull secret`;
  if (previous < c.maxUnresolvedTicks) j.event = { reason: "ImageStale", note: msg };
  return say(j, "stale", "unresolved_ceiling", msg);
}

function due(
  j: Judgement,
  img: ImageConfig,
  counters: ImageCounters,
  c: Config,
  o: Observed,
  digest: string,
): Judgement {
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
  // After the lockout check: a lockout is decided by the count alone (SPEC "Precise rules"),
  // also when another tick's write is what brought the count to the maximum.
  if (o.claimed?.includes(img.key)) {
    const msg = `another tick wrote refresh attempt ${count} of ${img.key} while this one was deciding; it owns this refresh, so this tick touches none of its workloads`;
    return say(j, "held", "attempt_claimed", msg);
  }
  j.due = { digest, count: count + 1 };
  j.verdict.short = `attempt ${count + 1}/${max}`;
  j.verdict.attemptCount = 0;
  j.verdict.lockedOut = false;
  return say(
    j,
    "refreshed",
    "digest_changed",
    `${img.key}: new build ${digest}; refresh attempt ${count + 1}/${max}`,
  );
}
