// One image's verdict from what was observed: a small pure function in the manner of Flux's
// shouldScan. Observed state in, verdict and named reason out; the writes it needs come back as
// data. Combining the verdicts (isolation, which writes travel together) is combine.ts's job.
import {
  annotationKeys,
  type ImageCounters,
  imageCounters,
  quoteForLog,
  readCounter,
} from "../annotations.ts";
import type { Config, ImageConfig } from "../config.ts";
import { stopUndoingAdvice } from "./advice.ts";
import { describeContainer, describeOwner, type LiveContainer, type LiveImage, liveImage } from "./live.ts";
import { type ImageVerdict, type Observed, workloadId } from "./model.ts";
import { soak } from "./soak.ts";

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
  const live = liveImage(img, o, c);
  if (live) {
    const held = targetFindings(j, img, live, c);
    if (held) return held;
    // Known from the targets alone, so an unresolved image still says whether it runs its pin.
    const R = a[keys.digest];
    j.verdict.inSync = R !== undefined && live.containers.every((x) => x.digest === R);
    // The first tick that finds the pin in place ends a repin streak, whatever the registry
    // says now: a later re-render then gets its one re-pin again.
    if (j.verdict.inSync && a[keys.repin] !== undefined) j.writes[keys.repin] = null;
  }
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
  const pause = live && humanPin(live, [recorded, L, ...candidateDigests(a[keys.candidates])]);
  if (pause) return paused(j, img, pause, c, a[keys.paused]);
  if (a[keys.paused] !== undefined) j.writes[keys.paused] = null;
  if (counters.rejected === L) {
    j.blocks = true;
    j.verdict.paused = true;
    const msg = `${img.key}: the registry's ${L} was rejected by a human; waiting for the next build of ${img.repository}:${c.tag}`;
    return say(j, "paused", "build_rejected", msg);
  }
  if (recorded === L) {
    j.verdict.verified = true;
    const off = live?.containers.filter((x) => x.digest !== recorded) ?? [];
    if (off.length > 0) return rerendered(j, { img, counters, c, o, digest: L, live }, off);
    return say(j, "noop", "unchanged", `${img.key} is on ${L}`);
  }
  const input: DueInput = { img, counters, c, o, digest: L, live };
  return c.minimumAgeMs > 0 ? soak(j, input, recorded) : due(j, input);
}

/** Targets that cannot be read, or that run another repository, hold the image first (steps 4, 6). */
function targetFindings(j: Judgement, img: ImageConfig, live: LiveImage, c: Config): Judgement | undefined {
  if (live.problems.length > 0) {
    const msg = `${img.key} cannot be checked, so none of its workloads is touched: ${live.problems.join("; ")}`;
    j.blocks = true;
    return say(j, "held", "target_unavailable", msg);
  }
  const wrong = live.containers.filter((x) => x.state === "other_repo");
  if (wrong.length === 0) return undefined;
  j.blocks = true;
  const list = wrong.map((x) => `${describeContainer(x)} runs ${x.image}`).join("; ");
  const msg = `${img.key} is configured as ${c.registry.host}/${img.repository}, but ${list}: it is never patched; check images[].targets[].container in the config`;
  return say(j, "held", "target_mismatch", msg);
}

/** A container a human (or a rollback) pinned: same repository, not a digest we know, not our write. */
function humanPin(live: LiveImage, known: string[]): LiveContainer | undefined {
  return live.containers.find(
    (x) =>
      !x.ours && ((x.state === "pinned" && !known.includes(x.digest as string)) || x.state === "other_tag"),
  );
}

function paused(
  j: Judgement,
  img: ImageConfig,
  x: LiveContainer,
  c: Config,
  announced: string | undefined,
): Judgement {
  j.blocks = true;
  j.verdict.paused = true;
  j.verdict.short = `(${x.owner?.manager ?? "unknown writer"})`;
  const resume = resumeCommand(x, img, c);
  j.verdict.resume = resume;
  const msg = `${img.key} is paused: ${describeContainer(x)} was set to ${x.image} by ${describeOwner(x.owner)}, not by image-refresh; no refresh of ${img.key} while it stays so. To hand it back: ${resume}`;
  // The marker remembers which pin was announced, so the Warning Event comes when a pause begins.
  if (announced !== x.image) {
    j.writes[annotationKeys(c.annotationPrefix).image(img.key).paused] = x.image;
    j.event = { reason: "RefreshPaused", note: msg };
  }
  return say(j, "paused", "pinned_by_human", msg);
}

/** The command that hands a paused container back: set it to the floating tag again. */
export function resumeCommand(x: Pick<LiveContainer, "target">, img: ImageConfig, c: Config): string {
  const t = x.target;
  const ref = `${c.registry.host}/${img.repository}:${c.tag}`;
  return `\`kubectl -n ${t.namespace} set image ${t.kind.toLowerCase()}/${t.name} ${t.container}=${ref}\` (the next tick re-pins it)`;
}

/**
 * L == R but some target does not name the pin: a deploy tool rendered the floating tag over it
 * (or an earlier failed attempt of ours is still there). `reconcile: repin` re-pins once, as a
 * counted refresh; the repin streak makes a second re-render in a row a contest, not a loop.
 */
function rerendered(j: Judgement, input: DueInput, off: LiveContainer[]): Judgement {
  const { img, c, o, digest: R } = input;
  const key = annotationKeys(c.annotationPrefix).image(img.key).repin;
  const x = off.find((y) => !y.ours) ?? (off[0] as LiveContainer);
  const what = `${describeContainer(x)} names ${x.image} (written by ${describeOwner(x.owner)}), not the pin ${R}`;
  if (c.reconcile === "report") {
    j.verdict.short = `(${x.owner?.manager ?? "unknown writer"})`;
    return say(
      j,
      "drifted",
      "tag_rerendered",
      `${what}; reconcile: report, so it is left as it is (pods may run any build of :${c.tag})`,
    );
  }
  const streak = readCounter(o.state.annotations[key]);
  // Only another writer contests a pin: the tag put back by our own revert of a failed re-pin is
  // that re-pin's next attempt (counted; the lockout ends it), not a deploy tool fighting us.
  const foreign = off.some((y) => !y.ours);
  if (streak.kind !== "absent" && foreign) return contested(j, img, x, what, streak, key);
  const managers = [...new Set(off.filter((y) => !y.ours).map((y) => y.owner?.manager ?? "unknown"))];
  const only = off.map((y) => `${workloadId(y.target)}/${y.target.container}`);
  const d = due(j, { ...input, repin: { only, managers, what } });
  if (d.due && o.state.annotations[key] !== "1") j.writes[key] = "1";
  return d;
}

function contested(
  j: Judgement,
  img: ImageConfig,
  x: LiveContainer,
  what: string,
  streak: ReturnType<typeof readCounter>,
  key: string,
): Judgement {
  j.blocks = true;
  j.verdict.short = `(${x.owner?.manager ?? "unknown writer"})`;
  const advice = stopUndoingAdvice(x.owner?.manager);
  if (streak.kind === "untrusted") {
    const msg = `${what}, and ${key} is ${quoteForLog(streak.raw)}, not a count; no re-pin until it is removed (\`image-refresh rearm ${img.key}\`)`;
    return say(j, "held", "pin_contested", msg);
  }
  const msg = `PIN CONTESTED: ${what} again after image-refresh re-pinned it; something keeps undoing the pin, so image-refresh does not re-pin again: ${advice}. Then run \`image-refresh rearm ${img.key}\``;
  // 1 is the re-pin; 2 marks the contest as announced, so the Warning Event comes once.
  if (streak.kind === "trusted" && streak.value < 2) {
    j.writes[key] = "2";
    j.event = { reason: "PinContested", note: msg };
  }
  return say(j, "held", "pin_contested", msg);
}

/** `<digest>=<time>,...`: the digests only; anything unreadable is ignored. */
function candidateDigests(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(",")
    .map((e) => e.split("=")[0]?.trim() ?? "")
    .filter((d) => d.startsWith("sha256:"));
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
  // After the lockout check: a lockout is decided by the count alone (SPEC "Precise rules"),
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
