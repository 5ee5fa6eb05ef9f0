// After the rollouts: the reset of the images whose workloads all settled, then (a separate
// request, so a failed digest write can never strand a lockout) the record of their digests, and
// the Events that say so. Each has its own failure policy, given below.
import { annotationKeys } from "../../annotations.ts";
import { ApiError } from "../../kube/errors.ts";
import { stateRef } from "../../workload.ts";
import type { ImageVerdict } from "../model.ts";
import {
  baseAttrs,
  describeState,
  failImage,
  patchState,
  postEvent,
  type Run,
  refreshVersion,
  remember,
  stillRefreshing,
} from "./state.ts";

/**
 * The reset is its own request so that a failed digest write can never strand a lockout. Its
 * precondition is a JSON-patch `test` on each count this tick wrote rather than the
 * resourceVersion: the state object may be the workload that just rolled out, and every status
 * write of its controller moves the resourceVersion without touching the counters.
 */
export async function reset(run: Run, counts: Record<string, number>): Promise<void> {
  const keys = annotationKeys(run.ctx.config.annotationPrefix);
  const settled = stillRefreshing(run, Object.keys(counts));
  if (settled.length === 0) return;
  let done: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const ops: object[] = [];
    done = [];
    for (const key of settled) {
      const k = keys.image(key);
      const current = run.annotations[k.attempt];
      const ours = String(counts[key]);
      // Another tick (a manual Job) wrote a count of its own since ours: that count belongs to its
      // rollout, which may still fail. Removing it would lose that failure; a rearm (absent) is fine.
      if (!run.ctx.dryRun && current !== undefined && current !== ours) {
        run.ctx.log.warn(
          `not resetting ${k.attempt} on ${describeState(run)}: it is ${current} now, written by another tick after this one wrote ${ours}`,
          { image: key },
        );
        continue;
      }
      if (current !== undefined) ops.push({ op: "test", path: annotationPointer(k.attempt), value: current });
      for (const name of [k.attempt, k.flap, k.traceparent])
        if (run.annotations[name] !== undefined) ops.push({ op: "remove", path: annotationPointer(name) });
      done.push(key);
    }
    try {
      if (ops.length > 0) await jsonPatchState(run, ops);
      break;
    } catch (err) {
      const lost = err instanceof ApiError && (err.code === 409 || err.code === 422);
      if (lost && attempt < 4) {
        await refreshVersion(run).catch(() => {});
        continue;
      }
      for (const key of settled)
        failImage(run, key, {
          outcome: "failed",
          reason: "reset_failed",
          message: `${key} rolled out, but its attempt counter on ${describeState(run)} cannot be reset: ${(err as Error).message}`,
        });
      return;
    }
  }
  for (const key of done) {
    const v = run.verdicts.get(key) as ImageVerdict;
    v.attemptCount = 0;
    v.lockedOut = false;
    run.root.addEvent("reset", { "image_refresh.image": key });
    run.ctx.telemetry.counter("image_refresh.resets", 1, baseAttrs(run, key));
  }
}

/** JSON pointer to an annotation; RFC 6901 escapes "~" and "/", and every key of ours has a "/". */
export function annotationPointer(key: string): string {
  return `/metadata/annotations/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
}

async function jsonPatchState(run: Run, ops: object[]): Promise<void> {
  if (run.ctx.dryRun) {
    run.ctx.log.info(`dry run: would PATCH ${describeState(run)}`, { ops });
    return;
  }
  remember(run, await run.ctx.kube.jsonPatch(stateRef(run.ctx.config), ops));
}

/**
 * Records the digests of the images that settled (and first observations not yet written).
 * Digests are facts, not counters: no precondition, so a controller's status write cannot fail it.
 */
export async function recordDigests(
  run: Run,
  digests: Record<string, string>,
  candidates: Record<string, string | null> = {},
): Promise<void> {
  const keys = annotationKeys(run.ctx.config.annotationPrefix);
  const entries = Object.entries(digests).filter(([key]) => {
    const v = run.verdicts.get(key);
    return v?.outcome === "refreshed" || v?.outcome === "recorded";
  });
  if (entries.length === 0) return refreshedEvent(run, digests);
  const annotations: Record<string, string | null> = {};
  for (const [key, d] of entries) {
    annotations[keys.digest(key)] = d;
    // A rejected build is history once another build of the image is recorded.
    if (run.annotations[keys.image(key).rejected] !== undefined) annotations[keys.image(key).rejected] = null;
    if (key in candidates) annotations[keys.image(key).candidates] = candidates[key] as string | null;
  }
  try {
    await patchState(run, annotations, false);
  } catch (err) {
    const message = `cannot record the digest on ${describeState(run)}: ${(err as Error).message}`;
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

/** Re-pinned images that settled are back on the recorded pin: one Warning Event names who had removed it. */
export async function pinRestored(run: Run, images: string[]): Promise<void> {
  const done = stillRefreshing(run, images);
  if (done.length === 0) return;
  const parts = done.map((key) => {
    const v = run.verdicts.get(key) as ImageVerdict;
    v.inSync = true;
    return `${key} back on ${v.digest} (the pin had been replaced by ${v.restoredFrom?.join(", ") || "an unknown writer"})`;
  });
  const note = `re-pinned ${parts.join("; ")}; if the tag is rendered over the pin again before a tick finds it in place, image-refresh stops re-pinning and reports pin_contested`;
  await postEvent(run, { type: "event", eventType: "Warning", reason: "PinRestored", note });
}

/** One Normal Event for the images that refreshed and were recorded. */
async function refreshedEvent(run: Run, digests: Record<string, string>): Promise<void> {
  const done = stillRefreshing(run, Object.keys(digests));
  if (done.length === 0) return;
  const repo = (key: string) => run.ctx.config.images.find((i) => i.key === key)?.repository ?? key;
  const note = `refreshed ${done.map((k) => `${repo(k)} → ${digests[k]}`).join(", ")}`;
  await postEvent(run, { type: "event", eventType: "Normal", reason: "Refreshed", note });
}
