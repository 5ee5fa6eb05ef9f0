// One workload re-imaged and waited for, the same way forward (rollouts.ts) and back (revert.ts):
// the guarded JSON patch and kubectl's rollout rules until rolloutTimeout.
import { imagePatchOps } from "../../kube/objects.ts";
import { type RolloutResult, waitForRollout } from "../../kube/rollout.ts";
import type { Workload } from "../../kube/workloads.ts";
import type { WorkloadRef } from "../model.ts";
import type { Run } from "./state.ts";

export type ImageSet = ReadonlyArray<{ name: string; image: string; path: string }>;

/** Sets the containers' images; throws what the API server answered. */
export async function patchImages(run: Run, workload: WorkloadRef, containers: ImageSet): Promise<Workload> {
  return run.ctx.kube.jsonPatch(workload, imagePatchOps(containers));
}

/** Waits for the rollout the patch started to settle on exactly these images. */
export function waitForImages(
  run: Run,
  workload: WorkloadRef,
  updated: Workload,
  containers: ImageSet,
): Promise<RolloutResult> {
  const { ctx } = run;
  return waitForRollout(ctx.kube, workload, {
    afterGeneration: updated.metadata.generation,
    written: updated,
    expectImages: Object.fromEntries(containers.map((c) => [c.name, c.image])),
    timeoutMs: ctx.config.rolloutTimeoutMs,
    signal: ctx.signal,
    telemetry: ctx.telemetry,
    log: ctx.log,
  });
}
