// One image's verdict from what was observed: a small pure function in the manner of Flux's
// shouldScan. Observed state in, verdict and named reason out; the writes it needs come back as
// data. The live spec's verdicts are in verdict-live.ts, the attempt rules in due.ts, the soak in
// soak.ts. Combining the verdicts (isolation, which writes travel together) is combine.ts's job.
import { annotationKeys, type ImageCounters, imageCounters, quoteForLog } from "../../annotations.ts";
import type { Config, ImageConfig } from "../../config.ts";
import { FIELD_MANAGER, type FieldOwner, lastOwner } from "../../kube/managed-fields.ts";
import type { ImageVerdict, Observed } from "../model.ts";
import { amend, type Change, type DueInput, due, type Judgement, say } from "./due.ts";
import { liveImage } from "./live.ts";
import { soak } from "./soak.ts";
import { candidateDigests, humanPin, paused, rerendered, targetFindings } from "./verdict-live.ts";

export type { Judgement } from "./due.ts";

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
  let j: Judgement = { verdict: base, blocks, writes: {}, countsStreak: false, flap: false };
  if (img.pinned)
    return say(j, {
      outcome: "noop",
      reason: "pinned",
      message: `${img.key} is pinned: never resolved, never touched`,
    });
  const live = liveImage(img, o, c);
  const recorded = a[keys.digest];
  if (live) {
    const held = targetFindings({ j, img, live, c });
    if (held) return held;
    // Known from the targets alone, so an unresolved image still says whether it runs its pin.
    const inSync = recorded !== undefined && live.containers.every((x) => x.digest === recorded);
    // The first tick that finds the pin in place ends a repin streak, whatever the registry
    // says now: a later re-render then gets its one re-pin again.
    const ended = inSync && a[keys.repin] !== undefined ? { [keys.repin]: null } : {};
    j = amend(j, { verdict: { inSync }, writes: ended });
  }
  const seen = o.digests?.[img.key];
  if (!seen?.ok) return unresolved({ j, img, counters, c, failure: seen?.ok === false ? seen : undefined });
  const L = seen.digest;
  j = amend(j, {
    verdict: { digest: L },
    writes: a[keys.unresolved] !== undefined ? { [keys.unresolved]: null } : {},
  });
  if (recorded === undefined)
    return say(
      j,
      { outcome: "recorded", reason: "first_observation", message: `first observation of ${img.key}: ${L}` },
      { firstSeen: L },
    );
  // A recorded digest that someone else wrote back is not this product's memory: `kubectl rollout
  // undo` of the state object restores its old annotations along with its old template, so the
  // container it pinned back matches the rewound record. That is a human's rollback too.
  const rewrittenBy = writtenBack(o.state.digestOwners?.[img.key]);
  const ours = rewrittenBy ? [] : [recorded];
  const pause = live && humanPin(live, [...ours, L, ...candidateDigests(a[keys.candidates])]);
  if (pause) return paused({ j, img, x: pause, c, announced: a[keys.paused], rewrittenBy });
  if (a[keys.paused] !== undefined) j = amend(j, { writes: { [keys.paused]: null } });
  if (counters.rejected === L) {
    const message = `${img.key}: the registry's ${L} was rejected by a human; waiting for the next build of ${img.repository}:${c.tag}`;
    return say(
      j,
      { outcome: "paused", reason: "build_rejected", message },
      { blocks: true, verdict: { paused: true } },
    );
  }
  if (recorded === L) {
    j = amend(j, { verdict: { verified: true } });
    const off = live?.containers.filter((x) => x.digest !== recorded) ?? [];
    if (off.length > 0) return rerendered({ j, img, counters, c, o, digest: L, live, off });
    return say(j, { outcome: "noop", reason: "unchanged", message: `${img.key} is on ${L}` });
  }
  const input: DueInput = { j, img, counters, c, o, digest: L, live };
  return c.minimumAgeMs > 0 ? soak({ ...input, recorded }) : due(input);
}

/** The manager that last changed a recorded digest, when that was not image-refresh. */
function writtenBack(owners: FieldOwner[] | undefined): string | undefined {
  if (!owners?.length || owners.some((x) => x.manager === FIELD_MANAGER)) return undefined;
  return lastOwner(owners)?.manager;
}

function unresolved({
  j,
  img,
  counters,
  c,
  failure,
}: {
  j: Judgement;
  img: ImageConfig;
  counters: ImageCounters;
  c: Config;
  /** What the registry said; undefined when it was not asked. */
  failure: { failure: string; message: string } | undefined;
}): Judgement {
  const keys = annotationKeys(c.annotationPrefix).image(img.key);
  const why = failure ? `${failure.failure}: ${failure.message}` : "not resolved";
  if (counters.unresolved.kind === "untrusted") {
    const message = `${img.key} could not be resolved (${why}) and ${keys.unresolved} is ${quoteForLog(counters.unresolved.raw)}, not a count; remove the annotation to reset it`;
    return say(
      j,
      { outcome: "error", reason: "unresolved_streak_untrusted", message },
      { verdict: { unresolvedStreak: undefined } },
    );
  }
  const previous = counters.unresolved.kind === "trusted" ? counters.unresolved.value : 0;
  const n = previous + 1;
  const counted: Change = {
    writes: { [keys.unresolved]: String(n) },
    countsStreak: true,
    verdict: {
      unresolvedStreak: n,
      short: `${n}/${c.maxUnresolvedTicks} (${failure?.failure ?? "not resolved"})`,
    },
  };
  const what = `cannot resolve ${img.repository}:${c.tag} (${why})`;
  if (n < c.maxUnresolvedTicks) {
    const message = `${what}; unresolved ${n}/${c.maxUnresolvedTicks} ticks in a row`;
    return say(j, { outcome: "unresolved", reason: "unresolved", message }, counted);
  }
  const message = `STALE: ${what} for ${n} ticks in a row (max ${c.maxUnresolvedTicks}); ${img.key} is not being refreshed: check the repository, the tag, the registry's CA and the pull secret`;
  const event =
    previous < c.maxUnresolvedTicks ? { event: { reason: "ImageStale" as const, note: message } } : {};
  return say(j, { outcome: "stale", reason: "unresolved_ceiling", message }, { ...counted, ...event });
}
