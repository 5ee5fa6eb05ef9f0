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
import type { DueInput, ImageCase } from "./case.ts";
import { due } from "./due.ts";
import { amend, type Judgement, type Said, say } from "./judgement.ts";
import { liveImage } from "./live.ts";
import { rollBackRejected } from "./regression.ts";
import { ofMax, settledGuard } from "./settle.ts";
import { soak } from "./soak.ts";
import {
  announcedPause,
  candidateDigests,
  humanPins,
  liveFindings,
  paused,
  rerendered,
} from "./verdict-live.ts";

export type { Judgement } from "./judgement.ts";

export const bookOf = (observed: Observed, key: string): ImageBook =>
  observed.book.images[key] ?? imageBook(() => undefined);

export function judgeImage(img: ImageConfig, observed: Observed, config: Config): Judgement {
  const b = bookOf(observed, img.key);
  const imageCase: ImageCase = { img, b, c: config, o: observed };
  const count = countOf(b.attempt);
  const lockedOut = count !== undefined && count >= config.maxRefreshAttempts;
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
  const start: Judgement = {
    verdict: base,
    blocks: lockedOut || count === undefined,
    writes: {},
    countsStreak: false,
    flap: false,
  };
  if (img.pinned)
    return say(start, {
      outcome: "noop",
      reason: "pinned",
      message: `${img.key} is pinned: never resolved, never touched`,
    });
  // The unresolved streak counts whatever else holds the image this tick.
  const [counted, stale] = unresolved(start, imageCase);
  const guard = settledGuard(counted, imageCase);
  const [j, held] = guard.held ? [guard.j, guard.j] : liveFindings(guard.j, imageCase);
  if (held) return stale && severity(stale.outcome) < severity(held.verdict.outcome) ? say(j, stale) : held;
  if (stale) return say(j, stale);
  const seen = observed.digests?.[img.key];
  if (!seen?.ok) throw new Error(`${img.key}: resolved without a digest`);
  return judgeResolved(j, imageCase, seen.digest);
}

/** The registry named `L` for the image: first seen, paused, rejected, in sync, re-rendered, or due. */
function judgeResolved(given: Judgement, imageCase: ImageCase, registryDigest: string): Judgement {
  const { img, b, o, c } = imageCase;
  const live = liveImage(img, o, c);
  const recorded = trusted(b.digest);
  const j = amend(given, { verdict: { digest: registryDigest } });
  if (recorded === undefined) {
    const floating = live?.containers.some((x) => x.state === "floating") === true;
    return say(amend(j, { firstSeen: registryDigest, ...(floating ? { adopt: true } : {}) }), {
      outcome: "recorded",
      reason: "first_observation",
      message: `first observation of ${img.key}: ${registryDigest}`,
    });
  }
  // R is the store's, which no rollback of a workload can rewind: always trusted. A container
  // set to anything else by someone else (a human's pin, a `kubectl rollout undo`) is a pause.
  const known = [
    recorded,
    registryDigest,
    ...candidateDigests(b.candidates.kind === "absent" ? undefined : b.candidates.raw),
  ];
  const pins = live ? humanPins(live, known) : [];
  if (pins.length > 0) return paused(j, imageCase, pins);
  const k =
    announcedPause(b) !== undefined ? amend(j, { writes: { [IMAGE_KEYS.paused.name(img.key)]: null } }) : j;
  const rollback = rollBackRejected(k, { ...imageCase, registryDigest });
  if (rollback) return rollback;
  if (trusted(b.rejected) === registryDigest) {
    const msg = `${img.key}: the registry's ${registryDigest} was rejected by a human; waiting for the next build of ${img.repository}:${img.tag}`;
    return say(amend(k, { blocks: true, verdict: { paused: true } }), {
      outcome: "paused",
      reason: "build_rejected",
      message: msg,
    });
  }
  const input: DueInput = { ...imageCase, digest: registryDigest, live };
  if (recorded === registryDigest) {
    // The tag's owner moved it back: every build first seen after it was withdrawn.
    const writes = b.candidates.kind !== "absent" ? { [IMAGE_KEYS.candidates.name(img.key)]: null } : {};
    const v = amend(k, { verdict: { verified: true }, writes });
    const off = live?.containers.filter((x) => x.digest !== recorded) ?? [];
    if (off.length > 0) return rerendered(v, input, off);
    return say(v, { outcome: "noop", reason: "unchanged", message: `${img.key} is on ${registryDigest}` });
  }
  return c.minimumAgeMs > 0 ? soak(k, input, recorded) : due(k, input);
}

/**
 * The unresolved streak: counted whatever else holds the image; the verdict it
 * reaches (unresolved, stale, or an untrusted streak) is returned for judgeImage to weigh.
 */
function unresolved(judgement: Judgement, { img, b, o, c }: ImageCase): [Judgement, Said | undefined] {
  const seen = o.digests?.[img.key];
  const name = IMAGE_KEYS.unresolved.name(img.key);
  if (seen?.ok)
    return [
      b.unresolved.kind !== "absent" ? amend(judgement, { writes: { [name]: null } }) : judgement,
      undefined,
    ];
  const failure = seen?.ok === false ? seen : undefined;
  const why = failure ? `${failure.failure}: ${failure.message}` : "not resolved";
  if (b.unresolved.kind === "untrusted") {
    const message = `${img.key} could not be resolved (${why}) and the store's ${name} is ${quoteForLog(b.unresolved.raw)}, not a count; remove that key to reset it`;
    return [
      amend(judgement, { verdict: { unresolvedStreak: undefined } }),
      { outcome: "error", reason: "unresolved_streak_untrusted", message },
    ];
  }
  const previous = countOf(b.unresolved) ?? 0;
  const n = previous + 1;
  const short = `${ofMax(n, c.maxUnresolvedTicks)} (${failure?.failure ?? "not resolved"})`;
  const counted = amend(judgement, {
    writes: { [name]: String(n) },
    countsStreak: true,
    verdict: { unresolvedStreak: n, short },
  });
  const what = `cannot resolve ${img.repository}:${img.tag} (${why})`;
  if (n < c.maxUnresolvedTicks) {
    const message = `${what}; unresolved ${n}/${c.maxUnresolvedTicks} ticks in a row`;
    return [counted, { outcome: "unresolved", reason: "unresolved", message }];
  }
  const message = `STALE: ${what} for ${n} ticks in a row (max ${c.maxUnresolvedTicks}); ${img.key} is not being refreshed: check the repository, the tag, the registry's CA and the pull secret`;
  const event = { reason: "ImageStale" as const, note: message };
  return [
    previous < c.maxUnresolvedTicks ? amend(counted, { events: [event] }) : counted,
    { outcome: "stale", reason: "unresolved_ceiling", message },
  ];
}
