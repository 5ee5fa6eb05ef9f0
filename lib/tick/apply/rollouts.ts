// One workload's rollout inside apply: the guarded patch, the wait, and what a failure means for
// the images that move together with it (its group). Other groups go on.
import { ApiError } from "../../kube/errors.ts";
import type { Workload } from "../../kube/workloads.ts";
import type { Rollout } from "../model.ts";
import { describeWorkload } from "../model.ts";
import { revertGroup } from "./revert.ts";
import { baseAttrs, type Failure, failImage, type Patched, postEvent, type Run } from "./state.ts";
import { patchImages, waitForImages } from "./workload-patch.ts";

export async function rolloutGroup(run: Run, a: Rollout): Promise<void> {
  if (run.failed.has(a.group)) return;
  const { ctx } = run;
  if (ctx.signal.aborted) {
    const why = (ctx.signal.reason as Error | undefined)?.message ?? "aborted";
    return failGroup(run, a, {
      outcome: "error",
      reason: "stopped",
      message: `the tick was stopped (${why}) before ${describeWorkload(a.workload)} was patched`,
    });
  }
  const what = describeWorkload(a.workload);
  const images = a.containers.map((c) => ({ name: c.name, image: c.image, path: c.path as string }));
  const summary = a.containers.map((c) => `${c.name}=${c.image}`).join(" ");
  if (ctx.dryRun) {
    ctx.log.info(`dry run: would PATCH ${what} ${summary} and wait for its rollout`);
    return;
  }
  const started = ctx.now();
  let updated: Workload;
  try {
    updated = await patchImages(run, a.workload, images);
  } catch (err) {
    // Refused before any workload of the group was touched (e.g. a container renamed since it
    // was read, so the patch's `test` failed): nothing started, so held, not failed. The count stays.
    const untouched = !run.started.has(a.group) && err instanceof ApiError && err.code === 422;
    const f: Failure = {
      outcome: untouched ? "held" : "failed",
      reason: untouched ? "target_unavailable" : "rollout_failed",
      message: `cannot re-image ${what}: ${(err as Error).message}`,
    };
    failGroup(run, a, back(a, f));
    // Already a way back (a regression's): nothing to revert to but the build that failed.
    return a.back ? undefined : revertGroup(run, a.group, f);
  }
  run.rolledOut = true;
  run.started.add(a.group);
  run.patched.push({ group: a.group, workload: a.workload, containers: before(a) });
  ctx.log.info(`patched ${what}: ${summary}; waiting for the rollout`, { workload: what, images: a.images });
  const r = await waitForImages(run, a.workload, updated, images);
  const seconds = (ctx.now() - started) / 1000;
  for (const key of a.images)
    ctx.telemetry.histogram("image_refresh.rollout.duration", seconds, {
      ...baseAttrs(run, key),
      "image_refresh.rollout.ok": r.ok,
    });
  if (r.ok) {
    ctx.log.info(`${what} rolled out: ${r.message}`, { workload: what });
    return;
  }
  // Say why the wait was cut short (SIGTERM, the tick's deadline): an operator reading the
  // Job's log must not mistake a drained node for a flapping workload.
  const cut = ctx.signal.aborted
    ? `; the tick was stopped: ${(ctx.signal.reason as Error)?.message ?? "aborted"}`
    : "";
  const how =
    r.reason === "unverified"
      ? "failed its verification"
      : r.reason === "crashed"
        ? "failed: a new pod crashed"
        : "did not settle";
  const message = `rollout of ${what} ${how} (${r.reason}): ${r.message}${cut}`;
  const failure: Failure = back(a, { outcome: "failed", reason: "rollout_failed", message });
  failGroup(run, a, failure);
  const note = `${message} (images ${run.groups[a.group]?.join(", ")})`;
  const event = {
    type: "event" as const,
    eventType: "Warning" as const,
    reason: "RolloutFailed" as const,
    note,
  };
  // About the workload that failed, where `kubectl describe` shows it.
  await postEvent(run, event, [updated]);
  if (!a.back) await revertGroup(run, a.group, failure);
}

/** A failure of the way back from a regression is a revert that failed. */
function back(a: Rollout, f: Failure): Failure {
  return a.back && f.outcome === "failed" ? { ...f, reason: "revert_failed" } : f;
}

/** The images the patched containers named when this tick read the workload: what a revert restores. */
function before(a: Rollout): Patched["containers"] {
  return a.containers.map((c) => ({ name: c.name, image: c.before ?? c.image, path: c.path as string }));
}

/** A failed rollout fails every image of its group; later rollouts of the group are not started. */
function failGroup(run: Run, a: Rollout, f: Failure): void {
  run.failed.set(a.group, f);
  const members = run.groups[a.group] ?? a.images;
  for (const key of members) {
    const own = a.images.includes(key);
    failImage(run, key, {
      ...f,
      message: own ? f.message : `${key} moves with ${a.images.join(", ")}: ${f.message}`,
    });
  }
}
