// One image's verdict from what was observed: a small pure function in the manner of Flux's
// shouldScan. Observed state in, verdict and named reason out; the writes it needs come back as
// data (store keys, from lib/state's table). The settled guard is settle.ts, the live spec's
// verdicts verdict-live.ts, the attempt rules due.ts, the soak soak.ts. Combining the verdicts
// (isolation, which writes travel together) is combine.ts's job.

import type { Config, ImageConfig } from "../../config.ts";
import { severity } from "../../outcomes.ts";
import { type ImageBook, imageBook } from "../../state/book.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, quoteForLog, trusted } from "../../state/values.ts";
import type { ImageVerdict, Observed } from "../model.ts";
import { type DueInput, due, type Judgement, say } from "./due.ts";
import { liveImage } from "./live.ts";
import { settledGuard } from "./settle.ts";
import { soak } from "./soak.ts";
import { candidateDigests, humanPin, paused, rerendered, targetFindings } from "./verdict-live.ts";

export type { Judgement } from "./due.ts";

export const bookOf = (o: Observed, key: string): ImageBook =>
  o.book.images[key] ?? imageBook(() => undefined);

export function judgeImage(img: ImageConfig, o: Observed, c: Config): Judgement {
  const b = bookOf(o, img.key);
  const count = countOf(b.attempt);
  const lockedOut = count !== undefined && count >= c.maxRefreshAttempts;
  const base: ImageVerdict = {
    key: img.key,
    repository: img.repository,
    outcome: "noop",
    reason: "unchanged",
    message: "",
    attemptCount: count,
    unresolvedStreak: 0,
    lockedOut: count === undefined ? undefined : lockedOut,
    paused: false,
    verified: false,
  };
  const j: Judgement = {
    verdict: base,
    blocks: lockedOut || count === undefined,
    writes: {},
    countsStreak: false,
    flap: false,
  };
  if (img.pinned) return say(j, "noop", "pinned", `${img.key} is pinned: never resolved, never touched`);
  // The unresolved streak counts whatever else holds the image this tick.
  const stale = unresolved(j, img, b, o, c);
  const held = settledGuard(j, img, b, o, c) ?? liveFindings(j, img, b, o, c);
  if (held) return stale && severity(stale.outcome) < severity(held.verdict.outcome) ? sayAs(j, stale) : held;
  if (stale) return sayAs(j, stale);
  const seen = o.digests?.[img.key];
  if (!seen?.ok) throw new Error(`${img.key}: resolved without a digest`);
  return judgeResolved(j, img, b, o, c, seen.digest);
}

type Said = Pick<ImageVerdict, "outcome" | "reason" | "message">;
const sayAs = (j: Judgement, s: Said) => say(j, s.outcome, s.reason, s.message);

/** Targets that cannot be read or run another repository hold the image; also says whether it runs its pin. */
function liveFindings(j: Judgement, img: ImageConfig, b: ImageBook, o: Observed, c: Config) {
  const live = liveImage(img, o, c);
  if (!live) return undefined;
  const held = targetFindings(j, img, live, c);
  if (held) return held;
  const recorded = trusted(b.digest);
  j.verdict.inSync = recorded !== undefined && live.containers.every((x) => x.digest === recorded);
  // The first tick that finds the pin in place ends a repin streak, whatever the registry says
  // now: a later re-render then gets its one re-pin again.
  if (j.verdict.inSync && b.repin.kind !== "absent") j.writes[IMAGE_KEYS.repin.name(img.key)] = null;
  return undefined;
}

function judgeResolved(
  j: Judgement,
  img: ImageConfig,
  b: ImageBook,
  o: Observed,
  c: Config,
  L: string,
): Judgement {
  const live = liveImage(img, o, c);
  const recorded = trusted(b.digest);
  j.verdict.digest = L;
  if (recorded === undefined) {
    j.firstSeen = L;
    return say(j, "recorded", "first_observation", `first observation of ${img.key}: ${L}`);
  }
  // R is the store's, which no rollback of a workload can rewind: always trusted. A container
  // set to anything else by someone else (a human's pin, a `kubectl rollout undo`) is a pause.
  const known = [
    recorded,
    L,
    ...candidateDigests(b.candidates.kind === "absent" ? undefined : b.candidates.raw),
  ];
  const pause = live && humanPin(live, known);
  const announced = b.paused.kind === "absent" ? undefined : b.paused.raw;
  if (pause) return paused(j, img, pause, c, announced);
  if (announced !== undefined) j.writes[IMAGE_KEYS.paused.name(img.key)] = null;
  if (trusted(b.rejected) === L) {
    j.blocks = true;
    j.verdict.paused = true;
    const msg = `${img.key}: the registry's ${L} was rejected by a human; waiting for the next build of ${img.repository}:${c.tag}`;
    return say(j, "paused", "build_rejected", msg);
  }
  const input: DueInput = { img, b, c, o, digest: L, live };
  if (recorded === L) {
    j.verdict.verified = true;
    // The tag's owner moved it back: every build first seen after it was withdrawn.
    if (b.candidates.kind !== "absent") j.writes[IMAGE_KEYS.candidates.name(img.key)] = null;
    const off = live?.containers.filter((x) => x.digest !== recorded) ?? [];
    if (off.length > 0) return rerendered(j, input, off);
    return say(j, "noop", "unchanged", `${img.key} is on ${L}`);
  }
  return c.minimumAgeMs > 0 ? soak(j, input, recorded) : due(j, input);
}

/**
 * The unresolved streak (SPEC step 5): counted whatever else holds the image; the verdict it
 * reaches (unresolved, stale, or an untrusted streak) is returned for judgeImage to weigh.
 */
function unresolved(j: Judgement, img: ImageConfig, b: ImageBook, o: Observed, c: Config): Said | undefined {
  const seen = o.digests?.[img.key];
  const name = IMAGE_KEYS.unresolved.name(img.key);
  if (seen?.ok) {
    if (b.unresolved.kind !== "absent") j.writes[name] = null;
    return undefined;
  }
  const failure = seen?.ok === false ? seen : undefined;
  const why = failure ? `${failure.failure}: ${failure.message}` : "not resolved";
  if (b.unresolved.kind === "untrusted") {
    j.verdict.unresolvedStreak = undefined;
    const message = `${img.key} could not be resolved (${why}) and the store's ${name} is ${quoteForLog(b.unresolved.raw)}, not a count; remove that key to reset it`;
    return { outcome: "error", reason: "unresolved_streak_untrusted", message };
  }
  const previous = countOf(b.unresolved) ?? 0;
  const n = previous + 1;
  j.writes[name] = String(n);
  j.countsStreak = true;
  j.verdict.unresolvedStreak = n;
  j.verdict.short = `${n}/${c.maxUnresolvedTicks} (${failure?.failure ?? "not resolved"})`;
  const what = `cannot resolve ${img.repository}:${c.tag} (${why})`;
  if (n < c.maxUnresolvedTicks)
    return {
      outcome: "unresolved",
      reason: "unresolved",
      message: `${what}; unresolved ${n}/${c.maxUnresolvedTicks} ticks in a row`,
    };
  const message = `STALE: ${what} for ${n} ticks in a row (max ${c.maxUnresolvedTicks}); ${img.key} is not being refreshed: check the repository, the tag, the registry's CA and the pull secret`;
  if (previous < c.maxUnresolvedTicks) j.event = { reason: "ImageStale", note: message };
  return { outcome: "stale", reason: "unresolved_ceiling", message };
}
