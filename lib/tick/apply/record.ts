// After the rollouts: the reset of the images whose workloads all settled, then (a separate
// request, so a failed digest write can never strand a lockout) the record of their digests, and
// the Events that say so. Each has its own failure policy.
import { type Change, merge, reset as resetKeys, setField } from "../../state/change.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, stamp } from "../../state/values.ts";
import { baseAttrs } from "../attributes.ts";
import type { ImageVerdict } from "../model.ts";
import { workloadId } from "../model.ts";
import {
  describeStore,
  failImage,
  postEvent,
  type Run,
  stillRefreshing,
  targetsOfImages,
  tickClock,
  withRetry,
} from "./state.ts";

/**
 * The reset is its own write so that a failed digest write can never strand a lockout. It is
 * decided against the store as it is now: a count another tick wrote since ours belongs to that
 * tick's rollout, which may still fail, so it stays (a rearm, absent, is fine).
 */
export async function reset(run: Run, counts: Record<string, number>): Promise<void> {
  const settled = stillRefreshing(run, Object.keys(counts));
  if (settled.length === 0) return;
  let done: string[] = [];
  const decide = () => {
    done = settled.filter((key) => {
      const current = run.book.images[key]?.attempt;
      const ours = counts[key];
      if (run.ctx.dryRun || !current || current.kind === "absent" || countOf(current) === ours) return true;
      run.ctx.log.warn(
        `not resetting ${IMAGE_KEYS.attempt.name(key)} in ${describeStore(run)}: it is ${current.raw} now, written by another tick after this one wrote ${ours}`,
        { image: key },
      );
      return false;
    });
    return merge(...done.map((key) => merge(resetKeys(run.book, key), verified(run, key))));
  };
  try {
    await withRetry(run, decide);
  } catch (err) {
    for (const key of settled)
      failImage(run, key, {
        outcome: "failed",
        reason: "reset_failed",
        message: `${key} rolled out, but its attempt counter in ${describeStore(run)} cannot be reset: ${(err as Error).message}`,
      });
    return;
  }
  for (const key of done) {
    const v = run.verdicts.get(key) as ImageVerdict;
    v.attemptCount = 0;
    v.lockedOut = false;
    run.root.addEvent("reset", { "image_refresh.image": key });
    run.ctx.telemetry.counter("image_refresh.resets", 1, baseAttrs(run, key));
  }
}

/** The attempt ended well: its build is the last attempt's, `verified`, kept after the reset. */
function verified(run: Run, key: string): Change {
  const a = run.attempts[key];
  return a ? setField(key, "last", { digest: a.digest, ending: "verified", at: tickClock(run) }) : {};
}

/**
 * Records the digests of the images that settled (and first observations not yet written).
 * Digests are facts, not counters: a conflict is re-read and the same record sent again.
 */
export async function recordDigests(
  run: Run,
  digests: Record<string, string>,
  candidates: Record<string, string | null> = {},
  also: Record<string, string | null> = {},
): Promise<void> {
  const entries = Object.entries(digests).filter(([key]) => {
    const v = run.verdicts.get(key);
    return v?.outcome === "refreshed" || v?.outcome === "recorded";
  });
  if (entries.length === 0) return refreshedEvent(run, digests);
  const decide = () => {
    const out: Record<string, string | null> = { ...also };
    for (const [key, d] of entries) {
      out[IMAGE_KEYS.digest.name(key)] = d;
      if (run.verdicts.get(key)?.outcome === "refreshed") Object.assign(out, verifiedWrites(run, key, d));
      // A rejected build is history once another build of the image is recorded.
      if (run.book.images[key]?.rejected.kind !== "absent") out[IMAGE_KEYS.rejected.name(key)] = null;
      if (key in candidates) out[IMAGE_KEYS.candidates.name(key)] = candidates[key] as string | null;
    }
    return out;
  };
  try {
    await withRetry(run, decide);
  } catch (err) {
    const message = `cannot record the digest in ${describeStore(run)}: ${(err as Error).message}`;
    for (const [key] of entries) {
      const refreshed = run.verdicts.get(key)?.outcome === "refreshed";
      failImage(run, key, { outcome: refreshed ? "failed" : "error", reason: "record_failed", message });
    }
    return;
  }
  for (const [key, d] of entries) {
    run.ctx.log.info(`${run.ctx.dryRun ? "would record" : "recorded"} ${key}=${d}`, {
      image: key,
      digest: d,
    });
    // Every target of a refreshed image settled on this pin: in sync with what is recorded now.
    const v = run.verdicts.get(key) as ImageVerdict;
    if (v.outcome === "refreshed") v.inSync = true;
  }
  await refreshedEvent(run, digests);
}

/**
 * A verified refresh also records the build its targets ran before (what a regression goes back
 * to) and when it was verified, by the tick's clock: the start of its regressionWindow.
 */
function verifiedWrites(run: Run, key: string, digest: string): Record<string, string | null> {
  const before = run.book.images[key]?.digest;
  const regressed = run.book.images[key]?.regressed;
  const clock = tickClock(run);
  return {
    // Another build verified: the regressed one is history (its count was reset with this record).
    ...(regressed && regressed.kind !== "absent" && regressed.raw !== digest
      ? { [IMAGE_KEYS.regressed.name(key)]: null }
      : {}),
    ...(before?.kind === "trusted" && before.value !== digest
      ? { [IMAGE_KEYS.previous.name(key)]: before.value }
      : {}),
    [IMAGE_KEYS.verifiedAt.name(key)]: stamp(clock),
  };
}

/**
 * Re-pinned images that settled are back on the recorded pin: one Warning Event names who had
 * removed it. An adoption (the first pin of a tag-following install) replaced no pin: it gets a
 * Normal Event per workload instead.
 */
export async function pinRestored(run: Run, images: string[]): Promise<void> {
  const done = stillRefreshing(run, images);
  if (done.length === 0) return;
  for (const key of done) (run.verdicts.get(key) as ImageVerdict).inSync = true;
  const adopted = done.filter((key) => run.verdicts.get(key)?.adopted === true);
  await adoptedEvents(run, adopted);
  const restored = done.filter((key) => !adopted.includes(key));
  if (restored.length === 0) return;
  const parts = restored.map((key) => {
    const v = run.verdicts.get(key) as ImageVerdict;
    return `${key} back on ${v.digest} (the pin had been replaced by ${v.restoredFrom?.join(", ") || "an unknown writer"})`;
  });
  const note = `re-pinned ${parts.join("; ")}; if the tag is rendered over the pin again before a tick finds it in place, image-refresh stops re-pinning and reports pin_contested`;
  await postEvent(run, { eventType: "Warning", reason: "PinRestored", note }, targetsOfImages(run, restored));
}

/** One Normal Event per workload the adoption pinned, naming only that workload's containers. */
async function adoptedEvents(run: Run, keys: readonly string[]): Promise<void> {
  const { config } = run.ctx;
  for (const p of run.patched) {
    const pins = keys.flatMap((key) => {
      const img = config.images.find((i) => i.key === key);
      const digest = run.verdicts.get(key)?.digest;
      if (!img || !digest) return [];
      return img.targets
        .filter(
          (t) => workloadId(t) === workloadId(p.workload) && p.containers.some((x) => x.name === t.container),
        )
        .map((t) => `${t.container}=${config.registry.host}/${img.repository}@${digest}`);
    });
    if (pins.length === 0) continue;
    const note = `adopted: pinned ${pins.join(", ")}, the build recorded when image-refresh first saw the floating tag :${config.tag}; from now on it keeps them on the newest build`;
    await postEvent(run, { eventType: "Normal", reason: "Pinned", note }, [p.workload]);
  }
}

/** One Normal Event for the images that refreshed and were recorded. */
async function refreshedEvent(run: Run, digests: Record<string, string>): Promise<void> {
  const done = stillRefreshing(run, Object.keys(digests));
  if (done.length === 0) return;
  const repo = (key: string) => run.ctx.config.images.find((i) => i.key === key)?.repository ?? key;
  const note = `refreshed ${done.map((k) => `${repo(k)} → ${digests[k]}`).join(", ")}`;
  await postEvent(run, { eventType: "Normal", reason: "Refreshed", note }, targetsOfImages(run, done));
}
