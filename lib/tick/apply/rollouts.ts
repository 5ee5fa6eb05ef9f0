// One workload's rollout inside apply: the guarded patch, the wait, and what a failure means for
// the images that move together with it (its group). Other groups go on.
import { isRefusal } from "../../kube/refusal.ts";
import type { Workload } from "../../kube/workloads.ts";
import { baseAttrs } from "../attributes.ts";
import type { Rollout } from "../model.ts";
import { describeWorkload } from "../model.ts";
import { endAttempts } from "./ending.ts";
import { announceLockouts } from "./lockout.ts";
import { refused } from "./refused.ts";
import { revertGroup } from "./revert.ts";
import { type Failure, failImage, type Patched, postEvent, type Run } from "./state.ts";
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
    return patchFailed(run, a, err);
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
  // Only a rollout that did not settle in time, reached its progress deadline, crashed or failed
  // its verification saw the build fail; a wait the API cut short (forbidden, the workload deleted
  // or changed by someone else) did not.
  const seen = SEEN_TO_FAIL.has(r.reason);
  const how =
    r.reason === "unverified"
      ? "failed its verification"
      : r.reason === "crashed"
        ? "failed: a new pod crashed"
        : "did not settle";
  const message = `rollout of ${what} ${how} (${r.reason}): ${r.message}`;
  if (a.back) return backFailed(run, a, { updated, message });
  return rolloutFailed(run, a, { updated, message, seen });
}

/** The wait's endings that saw the build itself fail. */
const SEEN_TO_FAIL = new Set(["timeout", "deadline_exceeded", "crashed", "unverified"]);

/**
 * The way back from a regression failed. Its attempt was counted, and its build named, before
 * anything was touched (the regression was seen): nothing is given back, nothing reverted again.
 */
async function backFailed(run: Run, a: Rollout, r: { updated?: Workload; message: string }): Promise<void> {
  const failure: Failure = { outcome: "failed", reason: "revert_failed", message: r.message };
  failGroup(run, a, failure);
  if (r.updated === undefined) return;
  const note = `${failure.message} (images ${run.groups[a.group]?.join(", ")})`;
  await postEvent(run, { eventType: "Warning", reason: "RolloutFailed", note }, [r.updated]);
}

/**
 * The patch did not go through. Refused before anything of the group changed: not an attempt
 * (refused.ts). A refusal after the group started, or an answer that never came: nobody saw the
 * build run, so the attempt ends without calling it failed, and what was patched goes back.
 */
async function patchFailed(run: Run, a: Rollout, err: unknown): Promise<void> {
  const message = `cannot re-image ${describeWorkload(a.workload)}: ${(err as Error).message}`;
  if (a.back) return backFailed(run, a, { message });
  if (isRefusal(err) && !run.started.has(a.group)) return refused(run, a, err);
  const f: Failure = {
    outcome: "failed",
    reason: "rollout_failed",
    message,
  };
  failGroup(run, a, f);
  // A stopped tick writes nothing more: its attempt stays `started`, told as abandoned.
  if (!run.ctx.signal.aborted)
    await endAttempts(run, members(run, a), isRefusal(err) ? "refused" : "interrupted");
  await revertGroup(run, a.group, f);
}

/**
 * The rollout was seen to fail: its build is named failed (and the image locked out when this
 * failure reaches the maximum), the group reverted, the lockout announced on this tick. A wait
 * cut short (SIGTERM, the tick's deadline) saw nothing fail: the attempt stays `started`.
 */
async function rolloutFailed(
  run: Run,
  a: Rollout,
  r: { updated: Workload; message: string; seen: boolean },
): Promise<void> {
  const { ctx } = run;
  // Say why the wait was cut short: an operator reading the Job's log must not mistake a
  // drained node for a flapping workload.
  const stopped = ctx.signal.aborted;
  const cut = stopped ? `; the tick was stopped: ${(ctx.signal.reason as Error)?.message ?? "aborted"}` : "";
  const failure: Failure = { outcome: "failed", reason: "rollout_failed", message: `${r.message}${cut}` };
  failGroup(run, a, failure);
  // A stopped tick writes nothing more: its attempt stays `started`, told as abandoned.
  const keys = members(run, a);
  if (!stopped && !r.seen) await endAttempts(run, keys, "interrupted");
  const ended = stopped || !r.seen ? undefined : await endAttempts(run, keys, "failed", { failed: true });
  const note = `${failure.message} (images ${run.groups[a.group]?.join(", ")})`;
  const event = {
    type: "event" as const,
    eventType: "Warning" as const,
    reason: "RolloutFailed" as const,
    note,
  };
  // About the workload that failed, where `kubectl describe` shows it.
  await postEvent(run, event, [r.updated]);
  const reverted = await revertGroup(run, a.group, failure);
  if (!ended || ended.written.length === 0) return;
  if (reverted !== undefined) await endAttempts(run, ended.written, reverted ? "reverted" : "revert_failed");
  await announceLockouts(run, ended.locked);
}

/** The images the patched containers named when this tick read the workload: what a revert restores. */
function before(a: Rollout): Patched["containers"] {
  return a.containers.map((c) => ({ name: c.name, image: c.before ?? c.image, path: c.path as string }));
}

/** The images that move with this rollout: its group. */
function members(run: Run, a: Rollout): string[] {
  return run.groups[a.group] ?? a.images;
}

/** A failed rollout fails every image of its group; later rollouts of the group are not started. */
function failGroup(run: Run, a: Rollout, f: Failure): void {
  run.failed.set(a.group, f);
  for (const key of members(run, a)) {
    const own = a.images.includes(key);
    failImage(run, key, {
      ...f,
      message: own ? f.message : `${key} moves with ${a.images.join(", ")}: ${f.message}`,
    });
  }
}
