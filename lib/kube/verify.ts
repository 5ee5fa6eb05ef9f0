// The verification window: a rollout that kubectl's rules call done has succeeded only once its
// new pods (those running the images it set, which are the new ReplicaSet's or controller
// revision's) stayed Ready for verifyFor with no container restarting, and the workload is still
// available at the end. A build that becomes Ready and crashes after its warm-up fails here, in
// the tick that rolled it out, instead of being recorded as good.
import { formatDuration, formatWait } from "../duration.ts";
import type { Logger } from "../log.ts";
import type { Telemetry } from "../telemetry.ts";
import { describeWorkload, workloadAttributes } from "../workload.ts";
import type { ObjectRef } from "./objects.ts";
import {
  describeEvidence,
  type Evidence,
  podEvidence,
  podsRunning,
  restartBaseline,
} from "./pod-evidence.ts";
import { watchPods } from "./pod-watch.ts";
import type { Pod } from "./pods.ts";
import type { RolloutResult } from "./rollout.ts";
import { rolloutStatus } from "./settled.ts";
import type { KubeClient } from "./workloads.ts";

export interface VerifyOptions {
  /** The workload's pods (its selector as a labelSelector). */
  podSelector: string;
  /** Container name to image: the pods running these are the rollout's new pods. */
  images: Record<string, string>;
  verifyForMs: number;
  /** The tick's own signal (SIGTERM, its deadline). */
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  minWatchIntervalMs?: number;
}

export function verifyRollout(
  client: KubeClient,
  ref: ObjectRef,
  opts: VerifyOptions,
): Promise<RolloutResult> {
  const attributes = { ...workloadAttributes(ref), "image_refresh.verify_for_ms": opts.verifyForMs };
  return opts.telemetry.span("rollout.verify", { kind: "internal", attributes }, async (span) => {
    const result = await verify(client, ref, opts);
    span.setAttributes({ "image_refresh.verify.result": result.ok ? "ok" : result.reason });
    if (!result.ok) span.setError(result.reason, result.message);
    return result;
  });
}

async function verify(client: KubeClient, ref: ObjectRef, opts: VerifyOptions): Promise<RolloutResult> {
  const what = describeWorkload(ref);
  const window = formatDuration(opts.verifyForMs);
  opts.log.info(`verifying ${what}: its new pods must stay Ready, without a restart, for ${window}`, {
    workload: what,
  });
  const started = Date.now();
  let watched: Watched;
  try {
    watched = await watchNewPods(client, ref, opts);
  } catch (e) {
    if (opts.signal.aborted) return cancelled(what);
    // Pods that cannot be read say nothing against the build: judged by kubectl's rules alone.
    opts.log.warn(`cannot verify ${what}: reading its pods failed: ${(e as Error).message}`, {
      workload: what,
    });
    return { ok: true, message: `${what} rolled out (not verified: its pods could not be read)` };
  }
  if (opts.signal.aborted) return cancelled(what);
  const { found, extended } = watched;
  if (found) {
    const evidence = describeEvidence(ref.namespace, found);
    // After an extension the window was longer than verifyFor: say how far into it the build failed.
    const when = extended
      ? `${formatWait(Date.now() - started)} into its window (verifyFor ${window}, extended for a pod that joined during it)`
      : `within ${window}`;
    const message = `${what} failed verification ${when}: ${evidence}`;
    return { ok: false, reason: "unverified", message, evidence };
  }
  return stillAvailable(client, ref, window);
}

/**
 * Follows the new pods until the window ends (undefined) or one shows evidence against the build.
 * A pod that joins during the window (a replacement for one deleted or evicted meanwhile) has not
 * lived through it: the window is extended until the newest pod too has been watched for
 * verifyFor, so a build is never verified on pods that lived a shorter time. Only the tick's own
 * signal bounds that (a workload whose pods keep being replaced is not verified, and not failed).
 */
interface Watched {
  /** Evidence against the build, if a pod showed any. */
  found?: Evidence;
  /** The window was extended for a pod that joined during it. */
  extended: boolean;
}

async function watchNewPods(client: KubeClient, ref: ObjectRef, opts: VerifyOptions): Promise<Watched> {
  const firstSeen = new Map<string, number>();
  let baseline: Map<string, Record<string, number>> | undefined;
  let alive: Pod[] = [];
  let end = Date.now() + opts.verifyForMs;
  let extended = false;
  for (;;) {
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(Math.max(0, end - Date.now()))]);
    const found = await watchPods(client.pods, {
      namespace: ref.namespace,
      labelSelector: opts.podSelector,
      signal,
      log: opts.log,
      minWatchIntervalMs: opts.minWatchIntervalMs,
      judge: (pods) => {
        const mine = podsRunning(pods, opts.images);
        // The first observation is the window's start: restarts already counted there failed
        // fast in the rollout wait, or belong to pods that were replaced.
        // The pods there are watched from the window's start; those that join later, from then.
        const now = baseline === undefined ? end - opts.verifyForMs : Date.now();
        baseline ??= restartBaseline(mine);
        for (const p of mine) if (!firstSeen.has(p.uid || p.name)) firstSeen.set(p.uid || p.name, now);
        alive = mine.filter((p) => !p.deleting);
        return podEvidence(mine, { unready: "known", baseline });
      },
    });
    if (found || opts.signal.aborted) return { found, extended };
    const newest = Math.max(0, ...alive.map((p) => firstSeen.get(p.uid || p.name) ?? 0));
    if (newest + opts.verifyForMs <= Date.now()) return { extended };
    end = newest + opts.verifyForMs;
    extended = true;
    opts.log.info(
      `verifying ${describeWorkload(ref)}: a pod joined during the window; watching until it too has been watched for ${formatDuration(opts.verifyForMs)}`,
      { workload: describeWorkload(ref) },
    );
  }
}

/** The workload itself stayed available: kubectl's rules still call its rollout done. */
async function stillAvailable(client: KubeClient, ref: ObjectRef, window: string): Promise<RolloutResult> {
  const what = describeWorkload(ref);
  try {
    const w = await client.get(ref);
    const status = rolloutStatus(w);
    if (status.done) return { ok: true, message: `${status.message}; verified for ${window}` };
    const message = `${what} did not stay available for ${window}: ${status.message}`;
    return { ok: false, reason: "unverified", message };
  } catch (e) {
    // Its pods stayed good the whole window; a failed read is no verdict on the build.
    return {
      ok: true,
      message: `${what} verified for ${window} (re-reading it failed: ${(e as Error).message})`,
    };
  }
}

function cancelled(what: string): RolloutResult {
  return { ok: false, reason: "error", message: `verification of ${what} cancelled` };
}
