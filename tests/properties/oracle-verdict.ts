// The verdict per image and the isolation of images that share a workload, computed from the
// annotations, the registry's answers and the generator's truth about every container (its class,
// digest and last writer), without lib/tick/ or lib/registry/image-ref.ts: the plan properties
// compare plan() with this, so a rule both halves of lib get wrong cannot hide behind itself.
import type { Config, Target } from "../../lib/config.ts";
import { severity } from "../../lib/outcomes.ts";
import type { Observed } from "../../lib/tick/model.ts";
import type { LiveTruth, Truth } from "./live-images.ts";
import { countOf, shares, stored, storedAttempt } from "./oracle.ts";

const wid = (t: { kind: string; namespace: string; name: string }) => `${t.kind}/${t.namespace}/${t.name}`;
/** A target container, as the re-pin's `only` names it. */
export const slotOf = (t: Target) => `${wid(t)}/${t.container}`;

/** The refresh an image wants: a new build to every target, or a re-pin of the off-pin ones to R. */
export interface Wanted {
  digest: string;
  repin: boolean;
  /** The target containers it patches (`<kind>/<namespace>/<name>/<container>`). */
  only: string[];
}

export interface Expected {
  outcome: string;
  reason: string;
  /** Holds every workload it has a container in, before isolation. */
  blocks: boolean;
  /** How far the verdict went: the targets were all readable and of the configured repository. */
  targetsOk: boolean;
  /** Resolved, recorded and not paused by a human: an existing pause marker is removed. */
  pastPause: boolean;
  /** The first container a human pinned, which pauses the image. */
  pauser?: LiveTruth;
  /** Every human pin of the image, in target order (the pause's marker names them all). */
  pins?: LiveTruth[];
  /** The refresh the verdict asks for, before the attempt-count rules. */
  wanted?: Wanted;
  /** The refresh the image starts, after the count rules and isolation. */
  due?: Wanted;
  /** The settled guard: the first target workload read and not settled, and the skip streak's new value. */
  unsettled?: string;
  skip?: number;
  /** This tick reaches maxSkipTicks: one RefreshFrozen Event about `unsettled`. */
  freezes?: boolean;
}

interface Ctx {
  c: Config;
  o: Observed;
  t: Truth;
  key: string;
}
const ann = ({ o }: Ctx, name: string) => stored(o, name);
const imageOf = ({ c, key }: Ctx) => c.images.find((i) => i.key === key);

/** Every target with what was read of it: the workload and the container's truth. */
function targetsOf(x: Ctx) {
  return (imageOf(x)?.targets ?? []).map((tg) => ({
    tg,
    w: x.o.workloads?.[wid(tg)],
    live: x.t[wid(tg)]?.[tg.container],
  }));
}

/**
 * The digests a pin may name without being a human's: R, L and the candidates. R is the store's,
 * which no rollback of a workload can rewind: always trusted.
 */
function knownDigests(x: Ctx, R: string, L: string): string[] {
  const raw = ann(x, `candidates-${x.key}`) ?? "";
  return [R, L, ...raw.split(",").map((e) => e.split("=")[0] ?? "")];
}

/** The first target container (config order) that a human pinned: same repository, not ours, unknown. */
export function humanPinOf(c: Config, o: Observed, t: Truth, key: string): LiveTruth | undefined {
  return humanPinsOf(c, o, t, key)[0];
}

/** Every container a human pinned, in target order: a pause names them all. */
export function humanPinsOf(c: Config, o: Observed, t: Truth, key: string): LiveTruth[] {
  const x = { c, o, t, key };
  const seen = o.digests?.[key];
  const R = ann(x, `last-refreshed-${key}-digest`);
  if (!seen?.ok || R === undefined) return [];
  const known = knownDigests(x, R, seen.digest);
  return targetsOf(x)
    .map((y) => y.live)
    .filter(
      (l): l is LiveTruth =>
        l !== undefined &&
        !l.ours &&
        (l.kind === "other_tag" || (l.kind === "digest" && !known.includes(l.digest as string))),
    );
}

/**
 * Every target of the image read, in the configured repository and pinned to its recorded digest
 * R, whatever the registry says: the tick that finds this ends a repin streak.
 */
export function onThePin(c: Config, o: Observed, t: Truth, key: string): boolean {
  const x = { c, o, t, key };
  const R = ann(x, `last-refreshed-${key}-digest`);
  if (R === undefined || imageOf(x)?.pinned) return false;
  const targets = targetsOf(x);
  return targets.every(({ w, live }) => w?.found === true && live?.kind === "digest" && live.digest === R);
}

/** The off-pin containers of a re-render include one that another writer put there. */
export function foreignOffPin(c: Config, o: Observed, t: Truth, key: string): boolean {
  const x = { c, o, t, key };
  const R = ann(x, `last-refreshed-${key}-digest`);
  return targetsOf(x).some(({ live }) => live !== undefined && live.digest !== R && !live.ours);
}

/** One image's verdict, before isolation. */
export function judge(c: Config, o: Observed, t: Truth, key: string): Expected {
  const x: Ctx = { c, o, t, key };
  const n = storedAttempt(o, key);
  const countBlocks = n.kind === "untrusted" || (n.kind === "trusted" && n.value >= c.maxRefreshAttempts);
  const e: Expected = { outcome: "", reason: "", blocks: countBlocks, targetsOk: false, pastPause: false };
  if (imageOf(x)?.pinned) return Object.assign(e, { outcome: "noop", reason: "pinned" });
  // The unresolved streak counts whatever else holds the image; the more severe verdict shows.
  const seen = o.digests?.[key];
  const stale = seen?.ok ? undefined : unresolvedVerdict(x);
  const held = settledGuard(x, e) ?? targetsHeld(x, e);
  if (held) {
    const worse = stale && severity(stale.outcome as never) < severity(held.outcome as never);
    return Object.assign(e, worse ? stale : held);
  }
  if (stale) return Object.assign(e, stale);
  return resolved(x, e, (seen as { digest: string }).digest);
}

type Said = { outcome: string; reason: string };

/** The settled guard, per image: a target read and not settled holds the image and counts the skip. */
function settledGuard(x: Ctx, e: Expected): Said | undefined {
  const id = [...new Set((imageOf(x)?.targets ?? []).map(wid))].find((w) => {
    const read = x.o.workloads?.[w];
    return read?.found === true && !read.settled;
  });
  if (id === undefined) return undefined;
  e.blocks = true;
  e.unsettled = id;
  const streak = countOf(ann(x, `skip-streak-${x.key}`));
  if (streak.kind === "untrusted") return { outcome: "error", reason: "skip_streak_untrusted" };
  const previous = streak.kind === "trusted" ? streak.value : 0;
  e.skip = previous + 1;
  if (e.skip < x.c.maxSkipTicks) return { outcome: "skipped", reason: "not_settled" };
  e.freezes = previous < x.c.maxSkipTicks;
  return { outcome: "frozen", reason: "skip_ceiling" };
}

/** Targets that cannot be read or run another repository hold the image and everything sharing them. */
function targetsHeld(x: Ctx, e: Expected): Said | undefined {
  const targets = targetsOf(x);
  const unavailable = targets.some(({ w, live }) => w?.found !== true || live === undefined);
  const mismatch = !unavailable && targets.some(({ live }) => live?.kind === "other_repo");
  if (!unavailable && !mismatch) {
    e.targetsOk = true;
    return undefined;
  }
  e.blocks = true;
  return { outcome: "held", reason: unavailable ? "target_unavailable" : "target_mismatch" };
}

/** A resolved image past the guards: first observation, pause, rejection, refresh or re-pin. */
function resolved(x: Ctx, e: Expected, L: string): Expected {
  const { c, o, t, key } = x;
  const say = (outcome: string, reason: string, blocks = e.blocks) =>
    Object.assign(e, { outcome, reason, blocks });
  const targets = targetsOf(x);
  const R = ann(x, `last-refreshed-${key}-digest`);
  if (R === undefined) return say("recorded", "first_observation");
  e.pauser = humanPinOf(c, o, t, key);
  e.pins = humanPinsOf(c, o, t, key);
  if (e.pauser) return say("paused", "pinned_by_human", true);
  e.pastPause = true;
  if (ann(x, `rejected-${key}-digest`) === L) return say("paused", "build_rejected", true);
  if (L !== R) {
    e.wanted = { digest: L, repin: false, only: targets.map(({ tg }) => slotOf(tg)) };
    return counted(x, e);
  }
  const off = targets.filter(({ live }) => live?.digest !== R);
  if (off.length === 0) return say("noop", "unchanged");
  if (c.reconcile === "report") return say("drifted", "tag_rerendered");
  // Only another writer contests the pin; image-refresh's own revert of a failed re-pin is retried.
  const foreign = off.some(({ live }) => live?.ours !== true);
  // A tick that lost the race re-reads the winner's streak: the winner's claim stands, no contest.
  const claimed = x.o.claimed?.includes(key) === true;
  if (ann(x, `repin-streak-${key}`) !== undefined && foreign && !claimed)
    return say("held", "pin_contested", true);
  e.wanted = { digest: R, repin: true, only: off.map(({ tg }) => slotOf(tg)) };
  return counted(x, e);
}

function unresolvedVerdict(x: Ctx): Said {
  const streak = countOf(ann(x, `unresolved-streak-${x.key}`));
  if (streak.kind === "untrusted") return { outcome: "error", reason: "unresolved_streak_untrusted" };
  const next = (streak.kind === "trusted" ? streak.value : 0) + 1;
  if (next >= x.c.maxUnresolvedTicks) return { outcome: "stale", reason: "unresolved_ceiling" };
  return { outcome: "unresolved", reason: "unresolved" };
}

/** Step 7's count rules, in their order: untrusted, lockout, claimed by another tick, cannot start. */
function counted(x: Ctx, e: Expected): Expected {
  const n = storedAttempt(x.o, x.key);
  if (n.kind === "untrusted") return Object.assign(e, { outcome: "held", reason: "attempt_untrusted" });
  if (n.kind === "trusted" && n.value >= x.c.maxRefreshAttempts)
    return Object.assign(e, { outcome: "locked_out", reason: "flap_lockout" });
  if (x.o.claimed?.includes(x.key))
    return Object.assign(e, { outcome: "held", reason: "attempt_claimed", blocks: true });
  if (targetsOf(x).some(({ w }) => w?.found === true && w.blocked !== undefined))
    return Object.assign(e, { outcome: "held", reason: "target_unavailable", blocks: true });
  const repin = e.wanted?.repin === true;
  return Object.assign(e, {
    outcome: "refreshed",
    reason: repin ? "pin_restored" : "digest_changed",
    due: e.wanted,
  });
}

/** Verdicts that hold a due image sharing a workload (skipped and frozen hold it by `blocks`). */
const BLOCKING = ["held", "locked_out", "paused"];

/**
 * Every image's verdict after isolation: a due image that shares a workload with a blocking one
 * waits with it (held, locked out or paused as that one is, reason shared_workload) and then
 * blocks in turn, to a fixpoint.
 */
export function expectedVerdicts(c: Config, o: Observed, t: Truth): Map<string, Expected> {
  const all = new Map(c.images.map((i) => [i.key, judge(c, o, t, i.key)]));
  const blocker = (e: Expected) => e.blocks || BLOCKING.includes(e.outcome);
  for (let changed = true; changed; ) {
    changed = false;
    for (const [key, e] of all) {
      if (!e.due) continue;
      if (![...all].some(([b, be]) => b !== key && blocker(be) && shares(c, key, b))) continue;
      Object.assign(e, { due: undefined, outcome: "waits", reason: "shared_workload", blocks: true });
      changed = true;
    }
  }
  return all;
}

/** The images this tick may roll out: due, and sharing no workload with one that holds them. */
export function expectedRollouts(c: Config, o: Observed, t: Truth): Set<string> {
  return new Set([...expectedVerdicts(c, o, t)].filter(([, e]) => e.due).map(([k]) => k));
}
