// The state of one apply run and the helpers every apply step shares (apply.ts, record.ts,
// rollouts.ts, revert.ts, workload-patch.ts import them from here, so none imports another's caller).
import { ApiError } from "../../kube/errors.ts";
import { postEvent as postKubeEvent } from "../../kube/events.ts";
import type { Workload } from "../../kube/workloads.ts";
import type { Outcome } from "../../outcomes.ts";
import type { SpanHandle } from "../../telemetry.ts";
import { stateRef, type WorkloadRef, workloadAttributes } from "../../workload.ts";
import type { TickContext } from "../context.ts";
import type { Action, ImageVerdict, Reason } from "../model.ts";
import type { Observation } from "../observe.ts";

export interface Failure {
  outcome: Outcome;
  reason: Reason;
  message: string;
}

/** Thrown inside apply to end the tick with a failure that concerns it as a whole. */
export class Stop extends Error {
  constructor(
    readonly failure: Failure,
    readonly conflict = false,
  ) {
    super(failure.message);
  }
}

/** One workload this tick patched: what its containers named before, for a revert. */
export interface Patched {
  group: number;
  workload: WorkloadRef;
  /** Container name, its image before this tick's patch, and its JSON-pointer path. */
  containers: Array<{ name: string; image: string; path: string }>;
}

export interface Run {
  ctx: TickContext;
  obs: Observation;
  root: SpanHandle;
  rv: string;
  /** The state object's annotations as of the last response we saw. */
  annotations: Record<string, string>;
  /** Verdicts by image key, amended as writes and rollouts fail. */
  verdicts: Map<string, ImageVerdict>;
  groups: Record<number, string[]>;
  /** Groups whose rollout failed, with why. */
  failed: Map<number, Failure>;
  /** Groups that have patched a workload: a refused patch after that is a failure, not a hold. */
  started: Set<number>;
  /** Some workload was patched: a lost compare-and-swap can no longer send the tick back. */
  rolledOut: boolean;
  /** Every workload this tick patched, in order, with the images it had: what a revert restores. */
  patched: Patched[];
  skipStreak?: number;
}

/** Per-image metric attributes; the state object's alone when no image is named. */
export function baseAttrs(run: { ctx: TickContext }, image?: string): Record<string, string> {
  const attrs = workloadAttributes(run.ctx.config.state);
  if (image === undefined) return attrs;
  const repo = run.ctx.config.images.find((i) => i.key === image)?.repository ?? image;
  return { ...attrs, "image_refresh.image": image, "container.image.name": repo };
}

export function describeState(run: Run): string {
  const s = run.ctx.config.state;
  return `${s.kind} ${s.namespace}/${s.name}`;
}

export async function patchState(
  run: Run,
  annotations: Record<string, string | null>,
  precondition: boolean,
): Promise<Workload | undefined> {
  const body = { metadata: { ...(precondition ? { resourceVersion: run.rv } : {}), annotations } };
  if (run.ctx.dryRun) {
    run.ctx.log.info(`dry run: would PATCH ${describeState(run)}`, { annotations });
    return undefined;
  }
  const updated = await run.ctx.kube.mergePatch(stateRef(run.ctx.config), body);
  remember(run, updated);
  return updated;
}

export const isConflict = (err: unknown) => err instanceof ApiError && err.code === 409;

export async function refreshVersion(run: Run): Promise<void> {
  if (run.ctx.dryRun) return;
  remember(run, await run.ctx.kube.get(stateRef(run.ctx.config)));
}

/** The images still on course for a refresh: due, and their group has not failed. */
export function stillRefreshing(run: Run, keys: readonly string[]): string[] {
  return keys.filter((k) => run.verdicts.get(k)?.outcome === "refreshed");
}

export function failImage(run: Run, key: string, f: Failure): void {
  const v = run.verdicts.get(key);
  if (!v) return;
  // A failed image's workloads may run the new build while the old one is recorded.
  Object.assign(v, {
    outcome: f.outcome,
    reason: f.reason,
    message: f.message,
    short: undefined,
    inSync: false,
  });
}

export function remember(run: Run, updated: Workload): void {
  run.rv = updated.metadata.resourceVersion;
  run.annotations = updated.metadata.annotations;
}

/** Posts one of the tick's Events, about the state object unless another object is named. */
export function postEvent(
  run: Run,
  a: Extract<Action, { type: "event" }>,
  regarding: Pick<Workload, "kind" | "metadata"> = run.obs.state,
): Promise<void> {
  const { ctx } = run;
  const input = {
    regarding,
    type: a.eventType,
    reason: a.reason,
    action: "Refresh",
    note: a.note,
    reportingInstance: ctx.instance,
  };
  return postKubeEvent(ctx.kube, input, {
    namespace: ctx.config.state.namespace,
    log: ctx.log,
    dryRun: ctx.dryRun,
    now: () => new Date(ctx.now()),
  });
}
