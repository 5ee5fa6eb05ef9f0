// onFailure: revert. When a group's rollout fails, every workload this tick patched
// for that group is patched back to exactly the images it had before the tick (from what the
// tick read), newest patch first, each waited for before the next. The counter stays
// incremented, so after maxRefreshAttempts reverted failures the image is locked out with its
// workloads healthy on the old build. A stopped tick (SIGTERM) starts no revert: the next tick
// finds the workloads as they are and goes on.
import type { Workload } from "../../kube/workloads.ts";
import { baseAttrs } from "../attributes.ts";
import type { ImageVerdict } from "../model.ts";
import { describeWorkload } from "../model.ts";
import { type Failure, failImage, type Patched, postEvent, type Run } from "./state.ts";
import { patchImages, waitForImages } from "./workload-patch.ts";

/**
 * Reverts the group's patched workloads, newest first, and amends its images' verdicts. Says
 * whether the revert settled; undefined when there was nothing to revert (or no revert to start).
 */
export async function revertGroup(run: Run, group: number, failed: Failure): Promise<boolean | undefined> {
  const { ctx } = run;
  const todo = run.patched.filter((p) => p.group === group).reverse();
  if (ctx.config.onFailure !== "revert" || todo.length === 0 || ctx.signal.aborted) return undefined;
  const members = run.groups[group] ?? [];
  for (const key of members) {
    run.root.addEvent("revert", { "image_refresh.image": key });
    ctx.telemetry.counter("image_refresh.reverts", 1, baseAttrs(run, key));
  }
  const problems: string[] = [];
  for (const p of todo) {
    // A revert after one of them failed to settle still puts the others back: each is a workload
    // that was healthy on its old images a minute ago.
    const problem = await revertOne(run, p);
    if (problem) problems.push(problem);
  }
  const what = todo.map((p) => describeWorkload(p.workload)).join(", ");
  const settled = problems.length === 0;
  const outcome = settled
    ? `reverted ${what} to the images they had before this tick (settled)`
    : `the revert did not settle: ${problems.join("; ")}`;
  const message = `${failed.message}; ${outcome}`;
  const reason = settled ? "rollout_failed_reverted" : "revert_failed";
  for (const key of members) {
    // Each image keeps what its failure said (one that moves with another says so).
    const v = run.verdicts.get(key) as ImageVerdict;
    failImage(run, key, { outcome: "failed", reason, message: `${v.message}; ${outcome}` });
    v.short = settled ? "(reverted)" : "(revert failed)";
  }
  const note = `${message} (images ${members.join(", ")})`;
  const event = {
    type: "event" as const,
    eventType: "Warning" as const,
    reason: settled ? ("RolloutReverted" as const) : ("RevertFailed" as const),
    note,
  };
  // About every workload the revert concerns: each one it put back (the one that failed among them).
  await postEvent(
    run,
    event,
    todo.map((p) => p.workload),
  );
  return settled;
}

/** One workload back on its old images: the same guarded patch as forward, then the same wait. */
async function revertOne(run: Run, p: Patched): Promise<string | undefined> {
  const { ctx } = run;
  const what = describeWorkload(p.workload);
  const attributes = { "k8s.workload": what, "image_refresh.revert.containers": p.containers.length };
  return ctx.telemetry.span("revert", { kind: "internal", attributes }, async (span) => {
    let updated: Workload;
    try {
      // The same guarded patch as forward: a container renamed meanwhile fails it.
      updated = await patchImages(run, p.workload, p.containers);
    } catch (err) {
      span.setError("patch_failed", (err as Error).message);
      return `cannot patch ${what} back: ${(err as Error).message}`;
    }
    const summary = p.containers.map((c) => `${c.name}=${c.image}`).join(" ");
    ctx.log.warn(`reverting ${what}: ${summary}; waiting for the rollout`, { workload: what });
    const r = await waitForImages(run, p.workload, updated, p.containers);
    span.setAttributes({ "image_refresh.revert.ok": r.ok });
    if (r.ok) {
      ctx.log.info(`${what} is back on its old images: ${r.message}`, { workload: what });
      return undefined;
    }
    span.setError(r.reason, r.message);
    return `${what} (${r.reason}): ${r.message}`;
  });
}
