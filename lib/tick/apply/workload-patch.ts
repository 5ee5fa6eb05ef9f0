// One workload re-imaged and waited for, the same way forward (rollouts.ts) and back (revert.ts):
// the guarded JSON patch, kubectl's rollout rules until rolloutTimeout, then the verification window.
import { imagePatchOps } from "../../kube/objects.ts";
import { selectorText } from "../../kube/pods.ts";
import { type RolloutResult, waitForRollout } from "../../kube/rollout.ts";
import { verifyRollout } from "../../kube/verify.ts";
import type { Workload } from "../../kube/workloads.ts";
import type { WorkloadRef } from "../model.ts";
import type { Run } from "./state.ts";

export type ImageSet = ReadonlyArray<{ name: string; image: string; path: string }>;

/** Sets the containers' images; throws what the API server answered. */
export async function patchImages(run: Run, workload: WorkloadRef, containers: ImageSet): Promise<Workload> {
  return run.ctx.kube.jsonPatch(workload, imagePatchOps(containers));
}

/**
 * Waits for the rollout the patch started to settle on exactly these images (failing fast when a
 * new pod crashes), then verifies it for verifyFor: its new pods stay Ready, none restarts.
 */
export async function waitForImages(
  run: Run,
  workload: WorkloadRef,
  updated: Workload,
  containers: ImageSet,
): Promise<RolloutResult> {
  const { ctx } = run;
  const images = Object.fromEntries(containers.map((c) => [c.name, c.image]));
  const selector = updated.spec.selector;
  const podSelector = selector ? selectorText(selector) : "";
  const waited = await waitForRollout(ctx.kube, workload, {
    afterGeneration: updated.metadata.generation,
    written: updated,
    expectImages: images,
    timeoutMs: ctx.config.rolloutTimeoutMs,
    signal: ctx.signal,
    telemetry: ctx.telemetry,
    log: ctx.log,
    ...(podSelector ? { podSelector } : {}),
  });
  if (!waited.ok || ctx.config.verifyForMs === 0 || !podSelector) return waited;
  return verifyRollout(ctx.kube, workload, {
    podSelector,
    images,
    verifyForMs: ctx.config.verifyForMs,
    signal: ctx.signal,
    telemetry: ctx.telemetry,
    log: ctx.log,
  });
}
