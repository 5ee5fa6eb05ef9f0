// A regression is not a skip: within regressionWindow of a verified refresh, a target that runs
// the recorded build, settled or not, whose own pods show evidence against that build (a restart
// since the verification, CrashLoopBackOff, running but not Ready) is a failed attempt of that
// build. It is counted (and its build named) before anything is touched, and with onFailure:
// revert the image's targets go back to previous-<key>-digest. A restart is counted once: one
// that finished before a regression already counted for the build is not evidence again. A
// workload unsettled for any other reason (pods Pending, a NotReady node) is left to the settled
// guard. Pure, like the rest of plan: observe lists the pods, this judges them with the clock.
import type { Config } from "../../config.ts";
import { describeEvidence, type Evidence, podEvidence, podsRunning } from "../../kube/pod-evidence.ts";
import type { Book, ImageBook } from "../../state/book.ts";
import { countOf, seenToFail, stamp, trusted } from "../../state/values.ts";
import type { Observed, WorkloadRef } from "../model.ts";
import { describeWorkload, workloadId } from "../model.ts";
import type { ImageCase } from "./case.ts";
import { amend, type Judgement, say } from "./judgement.ts";
import { liveImage } from "./live.ts";

/** The verification time of the recorded build, while the tick's clock is inside its window. */
function windowOpen({ b, o, c }: ImageCase): number | undefined {
  const at = trusted(b.verifiedAt);
  if (at === undefined || o.clock === undefined || trusted(b.digest) === undefined) return undefined;
  return o.clock - at <= c.regressionWindowMs ? at : undefined;
}

/**
 * When a regression of the recorded build was last counted (the last attempt's time, which is
 * the latest restart it counted): a restart that finished by then is not evidence again.
 */
function countedUntil(book: ImageBook): number | undefined {
  const last = trusted(book.last);
  const recorded = trusted(book.digest);
  return last && last.digest === recorded && seenToFail(last.ending) ? last.at : undefined;
}

/** The image's targets, settled or not, that run its recorded build inside the window. */
function suspects(imageCase: ImageCase) {
  const { img, b, o, c } = imageCase;
  const recorded = trusted(b.digest);
  if (img.pinned || windowOpen(imageCase) === undefined) return [];
  const live = liveImage(img, o, c);
  return (live?.containers ?? []).filter((container) => {
    const w = o.workloads?.[workloadId(container.target)];
    return w?.found && w.selector && container.digest === recorded;
  });
}

/**
 * The workloads whose pods observe must list (with their selector): every target, settled or
 * not, that runs a build still inside its regressionWindow; one list per workload. None outside
 * the window, nor for a target that no longer runs the recorded build.
 */
export function regressionSuspects(
  config: Config,
  observed: Observed,
): Array<{ ref: WorkloadRef; selector: string }> {
  const out = new Map<string, { ref: WorkloadRef; selector: string }>();
  for (const img of config.images) {
    const b = bookOrEmpty(observed.book, img.key);
    for (const x of suspects({ img, b, o: observed, c: config })) {
      const w = observed.workloads?.[workloadId(x.target)];
      const ref = { kind: x.target.kind, namespace: x.target.namespace, name: x.target.name };
      if (w?.found && w.selector) out.set(workloadId(ref), { ref, selector: w.selector });
    }
  }
  return [...out.values()];
}

const bookOrEmpty = (book: Book, key: string): ImageBook => book.images[key] as ImageBook;

/** What the pods of the recorded build show against it, on the first target that shows anything. */
function evidence(imageCase: ImageCase) {
  const { b, o } = imageCase;
  const since = windowOpen(imageCase);
  for (const x of suspects(imageCase)) {
    const pods = o.pods?.[workloadId(x.target)];
    if (!pods || !Array.isArray(pods)) continue;
    const running = podsRunning(pods, { [x.target.container]: x.image });
    const counted = countedUntil(b);
    const found: Evidence | undefined = podEvidence(running, {
      unready: "all",
      ...(since !== undefined ? { restartsSince: stamp(since) } : {}),
      ...(counted !== undefined ? { restartsAfter: stamp(counted) } : {}),
    });
    const ref = { kind: x.target.kind, namespace: x.target.namespace, name: x.target.name };
    const w = o.workloads?.[workloadId(x.target)];
    const settled = w?.found === true && w.settled;
    if (found) return { ref, found, settled };
  }
  return undefined;
}

/**
 * When the regression was seen: the later of the tick's clock and the restart it counted, so
 * that the next tick counts only a restart after it (the pods are listed after the clock is read).
 */
function seenAt(clock: number | undefined, found: Evidence): number | undefined {
  const restart = found.finishedAt === undefined ? Number.NaN : Date.parse(found.finishedAt);
  if (clock === undefined) return Number.isNaN(restart) ? undefined : restart;
  return Number.isNaN(restart) ? clock : Math.max(clock, restart);
}

/** The regression's judgement, or undefined when the recorded build shows nothing against it. */
export function regressed(judgement: Judgement, imageCase: ImageCase) {
  const { img, b, o, c } = imageCase;
  const seen = evidence(imageCase);
  const count = countOf(b.attempt);
  // An untrusted count or a lockout is judged by the rules that hold the image anyway.
  if (!seen || count === undefined || count >= c.maxRefreshAttempts) return undefined;
  const failed = trusted(b.digest) as string;
  const previous = trusted(b.previous);
  const n = count + 1;
  const max = c.maxRefreshAttempts;
  const showed = describeEvidence(seen.ref.namespace, seen.found);
  const state = seen.settled ? "is available, but" : "does not settle,";
  const head = `${img.key}: build ${failed} regressed within regressionWindow of its verification: ${describeWorkload(seen.ref)} ${state} ${showed}; failed attempt ${n}/${max}`;
  const back = previous !== undefined && previous !== failed && c.onFailure === "revert";
  const tail = back
    ? `; putting its targets back on ${previous}`
    : previous === undefined || previous === failed
      ? `; no earlier build is recorded to go back to: set its targets to a good build by hand (kubectl set image) or \`image-refresh reject ${img.key}\` and push a fix`
      : "; onFailure: keep leaves it running";
  const event = { reason: "BuildRegressed" as const, note: `${head}${tail}`, regarding: [seen.ref] };
  const next = amend(judgement, {
    due: {
      digest: back ? (previous as string) : failed,
      count: n,
      regression: { failed, back, at: seenAt(o.clock, seen.found) },
    },
    events: [event],
    verdict: {
      short: `attempt ${n}/${max}`,
      attempt: n,
      attemptCount: n,
      lockedOut: n >= max,
      inSync: false,
    },
  });
  return say(next, { outcome: "failed", reason: "regressed", message: `${head}${tail}` });
}

/**
 * A build a human rejected that runs on the image's targets (put there by image-refresh) while the
 * registry has nothing newer (`registryDigest` is that build) is rolled back to previous-<key>-digest: a
 * revert, not an attempt (no count). A newer build replaces it the usual way; a locked-out or
 * untrusted count, or a container a human pinned to it, is left to the rules that hold the image;
 * without an earlier build there is nothing to go back to (the pause says what to run by hand).
 */
export function rollBackRejected(
  judgement: Judgement,
  { img, b, o, c, registryDigest }: ImageCase & { registryDigest: string },
) {
  const rejected = trusted(b.rejected);
  const previous = trusted(b.previous);
  const count = countOf(b.attempt);
  if (!rejected || rejected !== registryDigest || count === undefined || count >= c.maxRefreshAttempts)
    return undefined;
  const running = liveImage(img, o, c)?.containers.filter((x) => x.digest === rejected) ?? [];
  if (running.length === 0 || running.some((x) => !x.ours)) return undefined;
  const where = [...new Set(running.map((x) => describeWorkload(x.target)))].join(", ");
  if (previous === undefined || previous === rejected) {
    const msg = `${img.key}: the rejected build ${rejected} runs on ${where} and no earlier build is recorded to go back to: put them back by hand (kubectl rollout undo, or kubectl set image to a good build)`;
    const held = amend(judgement, { blocks: true, verdict: { paused: true } });
    return say(held, { outcome: "paused", reason: "build_rejected", message: msg });
  }
  const msg = `${img.key}: the rejected build ${rejected} runs on ${where}: rolling back to ${previous}`;
  const next = amend(judgement, {
    due: { digest: previous, count, regression: { failed: rejected, back: true, counted: false } },
    verdict: { paused: true, inSync: false },
  });
  return say(next, { outcome: "paused", reason: "build_rejected", message: msg });
}
