// The verdicts the live spec of the targets decides: whether the image runs its pin, a target
// unreadable or running another repository, a human's pin, a tag re-rendered over the pin (a
// re-pin, or a contest when it keeps coming back). Pure; rows in plan.live.test.ts.

import type { Config, ImageConfig } from "../../config.ts";
import type { ImageBook } from "../../state/book.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { quoteForLog, trusted } from "../../state/values.ts";
import { workloadId } from "../model.ts";
import { stopUndoingAdvice } from "./advice.ts";
import type { DueInput, ImageCase } from "./case.ts";
import { due } from "./due.ts";
import { amend, type Judgement, say } from "./judgement.ts";
import { describeContainer, describeOwner, type LiveContainer, type LiveImage, liveImage } from "./live.ts";

/**
 * Targets that cannot be read or run another repository hold the image (the second value); also
 * says whether it runs its pin (the first: the judgement to go on with).
 */
export function liveFindings(judgement: Judgement, imageCase: ImageCase): [Judgement, Judgement | undefined] {
  const { img, b, o, c } = imageCase;
  const live = liveImage(img, o, c);
  if (!live) return [judgement, undefined];
  const held = targetFindings(judgement, imageCase, live);
  if (held) return [held, held];
  const recorded = trusted(b.digest);
  const inSync = recorded !== undefined && live.containers.every((x) => x.digest === recorded);
  // The first tick that finds the pin in place ends a repin streak, whatever the registry says
  // now: a later re-render then gets its one re-pin again.
  const writes: Record<string, null> = {};
  if (inSync && b.repin.kind !== "absent") writes[IMAGE_KEYS.repin.name(img.key)] = null;
  // Every pin in place: nothing is left to adopt (a new build's rollout pinned it all).
  if (inSync && b.adopt.kind !== "absent") writes[IMAGE_KEYS.adopt.name(img.key)] = null;
  return [amend(judgement, { verdict: { inSync }, writes }), undefined];
}

/** Targets that cannot be read, or that run another repository, hold the image first. */
export function targetFindings(
  judgement: Judgement,
  { img, c }: ImageCase,
  live: LiveImage,
): Judgement | undefined {
  if (live.problems.length > 0) {
    const msg = `${img.key} cannot be checked, so none of its workloads is touched: ${live.problems.join("; ")}`;
    return say(amend(judgement, { blocks: true }), {
      outcome: "held",
      reason: "target_unavailable",
      message: msg,
    });
  }
  const wrong = live.containers.filter((x) => x.state === "other_repo");
  if (wrong.length === 0) return undefined;
  const list = wrong.map((x) => `${describeContainer(x)} runs ${x.image}`).join("; ");
  const msg = `${img.key} is configured as ${img.registry.host}/${img.repository}, but ${list}: it is never patched; check images[].targets[].container in the config`;
  return say(amend(judgement, { blocks: true }), {
    outcome: "held",
    reason: "target_mismatch",
    message: msg,
  });
}

/**
 * The containers a human (or a rollback) pinned: same repository, not a digest we know, not our
 * write. Every one of them, so that a pause names them all at once, not one per tick.
 */
export function humanPins(live: LiveImage, known: string[]): LiveContainer[] {
  return live.containers.filter(
    (x) =>
      !x.ours && ((x.state === "pinned" && !known.includes(x.digest as string)) || x.state === "other_tag"),
  );
}

/** The pins whose pause was announced (the `paused-<key>` marker), if any were. */
export const announcedPause = (book: ImageBook): string | undefined =>
  book.paused.kind === "absent" ? undefined : book.paused.raw;

/** `pins`, the containers a human pinned, pause the image; every one is named, in one tick. */
export function paused(judgement: Judgement, { img, b, c }: ImageCase, pins: LiveContainer[]): Judgement {
  const announced = announcedPause(b);
  const resume = pins.map((x) => resumeCommand(x, img, c)).join("; ");
  const managers = [...new Set(pins.map((x) => x.owner?.manager ?? "unknown writer"))];
  const held = amend(judgement, {
    blocks: true,
    verdict: { paused: true, short: `(${managers.join(", ")})`, resume },
  });
  const what = pins
    .map((x) => `${describeContainer(x)} was set to ${x.image} by ${describeOwner(x.owner)}`)
    .join("; ");
  // Paused and locked out at once: the pause wins while the pin lasts, and says what comes after.
  const behind = judgement.verdict.lockedOut
    ? `; the lockout (${judgement.verdict.attemptCount} failed rollouts) waits behind the pause: handed back, ${img.key} is locked out again until \`image-refresh rearm ${img.key}\``
    : "";
  const msg = `${img.key} is paused: ${what}, not by image-refresh; no refresh of ${img.key} while it stays so${behind}. To hand it back: ${resume}`;
  // The marker remembers which pins were announced, so the Warning Event comes when a pause
  // begins (or a human pins one more container), not every tick.
  const marker = pins.map((x) => x.image).join(" ");
  if (announced !== marker) {
    const event = { reason: "RefreshPaused" as const, note: msg };
    const marked = amend(held, { writes: { [IMAGE_KEYS.paused.name(img.key)]: marker }, events: [event] });
    return say(marked, { outcome: "paused", reason: "pinned_by_human", message: msg });
  }
  return say(held, { outcome: "paused", reason: "pinned_by_human", message: msg });
}

/** The command that hands a paused container back: set it to the floating tag again. */
export function resumeCommand(
  container: Pick<LiveContainer, "target">,
  img: ImageConfig,
  _config: Config,
): string {
  const t = container.target;
  const ref = `${img.registry.host}/${img.repository}:${img.tag}`;
  return `\`kubectl -n ${t.namespace} set image ${t.kind.toLowerCase()}/${t.name} ${t.container}=${ref}\` (the next tick re-pins it)`;
}

/**
 * L == R but some target does not name the pin: a deploy tool rendered the floating tag over it
 * (or an earlier failed attempt of ours is still there). `reconcile: repin` re-pins once, as a
 * counted refresh; the repin streak makes a second re-render in a row a contest, not a loop.
 */
export function rerendered(judgement: Judgement, input: DueInput, off: LiveContainer[]): Judgement {
  const { c, b, img, digest: R } = input;
  const x = off.find((y) => !y.ours) ?? (off[0] as LiveContainer);
  const what = `${describeContainer(x)} names ${x.image} (written by ${describeOwner(x.owner)}), not the pin ${R}`;
  if (c.reconcile === "report") {
    return say(amend(judgement, { verdict: { short: `(${x.owner?.manager ?? "unknown writer"})` } }), {
      outcome: "drifted",
      reason: "tag_rerendered",
      message: `${what}; reconcile: report, so it is left as it is (pods may run any build of :${img.tag})`,
    });
  }
  // Only another writer contests a pin: the tag put back by our own revert of a failed re-pin is
  // that re-pin's next attempt (counted; the lockout ends it), not a deploy tool fighting us.
  const foreign = off.some((y) => !y.ours);
  // A tick that lost the race to another one re-reads a streak that tick just wrote, with the tag
  // still there because that tick's re-pin is under way: the claim stands, nothing is contested.
  const claimed = input.o.claimed?.includes(img.key) === true;
  if (b.repin.kind !== "absent" && foreign && !claimed) return contested(judgement, input, { x, what });
  const managers = [...new Set(off.filter((y) => !y.ours).map((y) => y.owner?.manager ?? "unknown"))];
  const only = off.map((y) => `${workloadId(y.target)}/${y.target.container}`);
  // The streak itself rides with the re-pin's attempt (combine.ts), so a re-pin that isolation
  // holds back (a shared workload) writes none.
  // The first re-pin of an install found on the floating tag at first observation adopts it.
  const adoption = b.adopt.kind !== "absent";
  return due(judgement, { ...input, repin: { only, managers, what, adoption } });
}

/** The tag came back over the pin this image's re-pin set: `x`, `what` it names. */
function contested(
  given: Judgement,
  { img, b }: ImageCase,
  { x, what }: { x: LiveContainer; what: string },
): Judgement {
  const streak = b.repin;
  const key = IMAGE_KEYS.repin.name(img.key);
  const j = amend(given, { blocks: true, verdict: { short: `(${x.owner?.manager ?? "unknown writer"})` } });
  const advice = stopUndoingAdvice(x.owner?.manager);
  if (streak.kind === "untrusted") {
    const msg = `${what}, and the store's ${key} is ${quoteForLog(streak.raw)}, not a count; no re-pin until it is removed (\`image-refresh rearm ${img.key}\`)`;
    return say(j, { outcome: "held", reason: "pin_contested", message: msg });
  }
  const msg = `PIN CONTESTED: ${what} again after image-refresh re-pinned it; something keeps undoing the pin, so image-refresh does not re-pin again: ${advice}. Then run \`image-refresh rearm ${img.key}\``;
  // 1 is the re-pin; 2 marks the contest as announced, so the Warning Event comes once.
  if (streak.kind === "trusted" && streak.value < 2) {
    const announced = amend(j, { writes: { [key]: "2" }, events: [{ reason: "PinContested", note: msg }] });
    return say(announced, { outcome: "held", reason: "pin_contested", message: msg });
  }
  return say(j, { outcome: "held", reason: "pin_contested", message: msg });
}

/** `<digest>=<time>,...`: the digests only; anything unreadable is ignored. */
// Not parseCandidates: an entry whose time is unreadable still names a build this installation
// saw, so a pin to it is no human's; the soak drops such an entry from its own list.
export function candidateDigests(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(",")
    .map((e) => e.split("=")[0]?.trim() ?? "")
    .filter((d) => d.startsWith("sha256:"));
}
