// The verdicts the live spec of the targets decides: a target unreadable or
// running another repository, a human's pin, a tag re-rendered over the pin (a re-pin, or a
// contest when it keeps coming back). Pure; rows in plan.live.test.ts.
import { annotationKeys, quoteForLog, readCounter } from "../../annotations.ts";
import type { Config, ImageConfig } from "../../config.ts";
import { workloadId } from "../../workload.ts";
import { stopUndoingAdvice } from "./advice.ts";
import { type Change, type DueInput, due, type Judgement, say } from "./due.ts";
import { describeContainer, describeOwner, type LiveContainer, type LiveImage } from "./live.ts";

/** Targets that cannot be read, or that run another repository, hold the image first. */
export function targetFindings({
  j,
  img,
  live,
  c,
}: {
  j: Judgement;
  img: ImageConfig;
  live: LiveImage;
  c: Config;
}): Judgement | undefined {
  if (live.problems.length > 0) {
    const message = `${img.key} cannot be checked, so none of its workloads is touched: ${live.problems.join("; ")}`;
    return say(j, { outcome: "held", reason: "target_unavailable", message }, { blocks: true });
  }
  const wrong = live.containers.filter((x) => x.state === "other_repo");
  if (wrong.length === 0) return undefined;
  const list = wrong.map((x) => `${describeContainer(x)} runs ${x.image}`).join("; ");
  const message = `${img.key} is configured as ${c.registry.host}/${img.repository}, but ${list}: it is never patched; check images[].targets[].container in the config`;
  return say(j, { outcome: "held", reason: "target_mismatch", message }, { blocks: true });
}

/** A container a human (or a rollback) pinned: same repository, not a digest we know, not our write. */
export function humanPin(live: LiveImage, known: string[]): LiveContainer | undefined {
  return live.containers.find(
    (x) =>
      !x.ours && ((x.state === "pinned" && !known.includes(x.digest as string)) || x.state === "other_tag"),
  );
}

export interface PauseInput {
  j: Judgement;
  img: ImageConfig;
  /** The container a human pinned. */
  x: LiveContainer;
  c: Config;
  /** The pin whose pause was announced already (the paused marker). */
  announced: string | undefined;
  /** Who wrote the recorded digest back with the pin (a rollback of the state object). */
  rewrittenBy?: string;
}

export function paused({ j, img, x, c, announced, rewrittenBy }: PauseInput): Judgement {
  const resume = resumeCommand(x, img, c);
  const back = rewrittenBy
    ? ` (${rewrittenBy} also wrote back the recorded digest, as a rollback of the state object does)`
    : "";
  const message = `${img.key} is paused: ${describeContainer(x)} was set to ${x.image} by ${describeOwner(x.owner)}, not by image-refresh${back}; no refresh of ${img.key} while it stays so. To hand it back: ${resume}`;
  // The marker remembers which pin was announced, so the Warning Event comes when a pause begins.
  const announce: Change =
    announced !== x.image
      ? {
          writes: { [annotationKeys(c.annotationPrefix).image(img.key).paused]: x.image },
          event: { reason: "RefreshPaused", note: message },
        }
      : {};
  return say(
    j,
    { outcome: "paused", reason: "pinned_by_human", message },
    {
      ...announce,
      blocks: true,
      verdict: { paused: true, short: `(${x.owner?.manager ?? "unknown writer"})`, resume },
    },
  );
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
export function rerendered(input: DueInput & { off: LiveContainer[] }): Judgement {
  const { j, img, c, o, digest: R, off } = input;
  const key = annotationKeys(c.annotationPrefix).image(img.key).repin;
  const x = off.find((y) => !y.ours) ?? (off[0] as LiveContainer);
  const what = `${describeContainer(x)} names ${x.image} (written by ${describeOwner(x.owner)}), not the pin ${R}`;
  if (c.reconcile === "report") {
    const message = `${what}; reconcile: report, so it is left as it is (pods may run any build of :${c.tag})`;
    return say(
      j,
      { outcome: "drifted", reason: "tag_rerendered", message },
      { verdict: { short: `(${x.owner?.manager ?? "unknown writer"})` } },
    );
  }
  const streak = readCounter(o.state.annotations[key]);
  // Only another writer contests a pin: the tag put back by our own revert of a failed re-pin is
  // that re-pin's next attempt (counted; the lockout ends it), not a deploy tool fighting us.
  const foreign = off.some((y) => !y.ours);
  if (streak.kind !== "absent" && foreign) return contested({ j, img, x, what, streak, key });
  const managers = [...new Set(off.filter((y) => !y.ours).map((y) => y.owner?.manager ?? "unknown"))];
  const only = off.map((y) => `${workloadId(y.target)}/${y.target.container}`);
  // The streak itself rides with the re-pin's attempt (combine.ts), so a re-pin that isolation
  // holds back (a shared workload) writes none.
  return due({ ...input, repin: { only, managers, what } });
}

function contested({
  j,
  img,
  x,
  what,
  streak,
  key,
}: {
  j: Judgement;
  img: ImageConfig;
  x: LiveContainer;
  what: string;
  streak: ReturnType<typeof readCounter>;
  /** The repin streak's annotation. */
  key: string;
}): Judgement {
  const held: Change = { blocks: true, verdict: { short: `(${x.owner?.manager ?? "unknown writer"})` } };
  const advice = stopUndoingAdvice(x.owner?.manager);
  if (streak.kind === "untrusted") {
    const message = `${what}, and ${key} is ${quoteForLog(streak.raw)}, not a count; no re-pin until it is removed (\`image-refresh rearm ${img.key}\`)`;
    return say(j, { outcome: "held", reason: "pin_contested", message }, held);
  }
  const message = `PIN CONTESTED: ${what} again after image-refresh re-pinned it; something keeps undoing the pin, so image-refresh does not re-pin again: ${advice}. Then run \`image-refresh rearm ${img.key}\``;
  // 1 is the re-pin; 2 marks the contest as announced, so the Warning Event comes once.
  const announce: Change =
    streak.kind === "trusted" && streak.value < 2
      ? { writes: { [key]: "2" }, event: { reason: "PinContested", note: message } }
      : {};
  return say(j, { outcome: "held", reason: "pin_contested", message }, { ...held, ...announce });
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
