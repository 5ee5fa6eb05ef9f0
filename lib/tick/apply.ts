// Apply: carries out a plan's actions in order. Each action has its own failure policy, taken
// from SPEC: an uncounted skip or an unpersisted attempt stops the tick before any rollout; a
// failed streak clear or Event is only a warning; the reset never depends on the digest write.
import { type AnnotationKeys, annotationKeys, readCounter } from "../annotations.ts";
import { ApiError } from "../kube/errors.ts";
import { buildEvent } from "../kube/events.ts";
import { waitForRollout } from "../kube/rollout.ts";
import type { Workload } from "../kube/workloads.ts";
import type { Outcome } from "../outcomes.ts";
import type { SpanHandle } from "../telemetry.ts";
import type { TickContext } from "./context.ts";
import type { Action, Decision, Reason } from "./model.ts";
import { workloadId } from "./model.ts";
import { type Observation, stateRef } from "./observe.ts";

export interface Applied {
  outcome: Outcome;
  reason: Reason;
  message: string;
  /** A compare-and-swap lost to a concurrent write before anything irreversible: observe and plan again. */
  conflict?: boolean;
  /** Counters as the tick left them (undefined: untrusted and untouched), for the gauges. */
  attemptCount?: number;
  skipStreak?: number;
}

/** Thrown inside apply to end it with a given outcome. */
class Stop extends Error {
  constructor(readonly applied: Applied) {
    super(applied.message);
  }
}

interface Run {
  ctx: TickContext;
  obs: Observation;
  root: SpanHandle;
  rv: string;
  /** The state object's annotations as of the last response we saw. */
  annotations: Record<string, string>;
  rolledOut: boolean;
  attemptCount?: number;
  skipStreak?: number;
}

export async function apply(
  d: Decision,
  obs: Observation,
  ctx: TickContext,
  root: SpanHandle,
): Promise<Applied> {
  const keys = annotationKeys(ctx.config.annotationPrefix);
  const annotations = obs.state.metadata.annotations;
  const run: Run = {
    ctx,
    obs,
    root,
    rv: obs.state.metadata.resourceVersion,
    annotations,
    rolledOut: false,
    attemptCount: counterValue(annotations[keys.attempt]),
    skipStreak: counterValue(annotations[keys.skipStreak]),
  };
  const counters = () => ({ attemptCount: run.attemptCount, skipStreak: run.skipStreak });
  try {
    for (const action of d.actions) await step(run, action);
  } catch (err) {
    if (err instanceof Stop) return { ...err.applied, ...counters() };
    throw err;
  }
  return { outcome: d.outcome, reason: d.reason, message: d.message, ...counters() };
}

function counterValue(raw: string | undefined): number | undefined {
  const c = readCounter(raw);
  return c.kind === "absent" ? 0 : c.kind === "trusted" ? c.value : undefined;
}

async function step(run: Run, a: Action): Promise<void> {
  const keys = annotationKeys(run.ctx.config.annotationPrefix);
  switch (a.type) {
    case "write-streak":
      await guarded(
        run,
        { [keys.skipStreak]: String(a.value) },
        { outcome: "error", reason: "streak_not_counted", what: `skip streak ${a.value}` },
      );
      // The skip_streak gauge reports the streak as this tick left it, like attempt_count.
      run.skipStreak = a.value;
      return;
    case "clear-streak":
      return clearStreak(run, keys.skipStreak);
    case "mark-flap":
      return guarded(
        run,
        { [keys.flap]: String(a.count) },
        { outcome: "error", reason: "flap_marker_not_written", what: "flap marker" },
      );
    case "persist-attempt":
      await guarded(
        run,
        {
          [keys.attempt]: String(a.count),
          [keys.traceparent]: run.ctx.telemetry.rootTraceparent(),
          ...digestAnnotations(keys, a.firstSeen ?? {}),
        },
        { outcome: "held", reason: "attempt_not_persisted", what: `refresh attempt ${a.count}` },
      );
      run.attemptCount = a.count;
      run.root.addEvent("attempt", { "image_refresh.attempt": a.count });
      run.ctx.telemetry.counter("image_refresh.attempts", 1, baseAttrs(run));
      return;
    case "rollout":
      return rollout(run, a);
    case "reset":
      return reset(run, [keys.attempt, keys.flap, keys.traceparent]);
    case "record-digests":
      return recordDigests(run, a.digests);
    case "event":
      return postEvent(run, a);
  }
}

export function baseAttrs(run: { ctx: TickContext }): Record<string, string> {
  const s = run.ctx.config.state;
  return { "k8s.namespace.name": s.namespace, [`k8s.${s.kind.toLowerCase()}.name`]: s.name };
}

function describeState(run: Run): string {
  const s = run.ctx.config.state;
  return `${s.kind} ${s.namespace}/${s.name}`;
}

async function patchState(
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

const isConflict = (err: unknown) => err instanceof ApiError && err.code === 409;

/** A counter write guarded by resourceVersion; a lost race sends the tick back to observe. */
async function guarded(
  run: Run,
  annotations: Record<string, string>,
  fail: { outcome: Outcome; reason: Reason; what: string },
) {
  try {
    await patchState(run, annotations, true);
  } catch (err) {
    if (isConflict(err) && !run.rolledOut) {
      throw new Stop({
        outcome: fail.outcome,
        reason: fail.reason,
        message: `${fail.what}: state changed concurrently`,
        conflict: true,
      });
    }
    const message = `cannot write ${fail.what} to ${describeState(run)}: ${(err as Error).message}`;
    throw new Stop({ outcome: fail.outcome, reason: fail.reason, message });
  }
}

async function clearStreak(run: Run, key: string): Promise<void> {
  try {
    await patchState(run, { [key]: null }, true);
    run.skipStreak = 0;
  } catch (err) {
    // A streak that could not be cleared only makes a later freeze come early; stopping the
    // tick here would stop every refresh instead, which is the failure this job exists to avoid.
    run.ctx.log.warn(`cannot clear the skip streak on ${describeState(run)}; going on`, {
      error: (err as Error).message,
    });
    // The next write needs the current resourceVersion; if even the re-read fails, that write
    // will meet its own conflict and the tick re-reads from the start.
    if (isConflict(err))
      await refreshVersion(run).catch((e: Error) =>
        run.ctx.log.warn(`cannot re-read ${describeState(run)} after the conflict`, { error: e.message }),
      );
  }
}

async function refreshVersion(run: Run): Promise<void> {
  if (run.ctx.dryRun) return;
  remember(run, await run.ctx.kube.get(stateRef(run.ctx.config)));
}

async function rollout(run: Run, a: Extract<Action, { type: "rollout" }>): Promise<void> {
  const { ctx } = run;
  const id = workloadId(a.workload);
  const what = `${a.workload.kind} ${a.workload.namespace}/${a.workload.name}`;
  const paths = run.obs.paths[id] ?? {};
  // test-then-replace by index: a renamed or reordered container fails the patch instead of
  // getting the image of another container (a strategic merge would append a new container).
  const ops = a.containers.flatMap((c) => [
    { op: "test", path: `${paths[c.name]}/name`, value: c.name },
    { op: "replace", path: `${paths[c.name]}/image`, value: c.image },
  ]);
  const summary = a.containers.map((c) => `${c.name}=${c.image}`).join(" ");
  if (ctx.dryRun) {
    ctx.log.info(`dry run: would PATCH ${what} ${summary} and wait for its rollout`);
    return;
  }
  const started = ctx.now();
  let generation: number;
  try {
    const updated = await ctx.kube.jsonPatch(a.workload, ops);
    generation = updated.metadata.generation;
    if (id === workloadId(stateRef(ctx.config))) remember(run, updated);
  } catch (err) {
    // Refused before any workload was touched (e.g. a container renamed since it was read, so
    // the patch's `test` failed): nothing started, so held, not failed. The count stays.
    const untouched = !run.rolledOut && err instanceof ApiError && err.code === 422;
    throw new Stop({
      outcome: untouched ? "held" : "failed",
      reason: untouched ? "target_unavailable" : "rollout_failed",
      message: `cannot re-image ${what}: ${(err as Error).message}`,
    });
  }
  run.rolledOut = true;
  ctx.log.info(`patched ${what}: ${summary}; waiting for the rollout`);
  const r = await waitForRollout(ctx.kube, a.workload, {
    afterGeneration: generation,
    expectImages: Object.fromEntries(a.containers.map((c) => [c.name, c.image])),
    timeoutMs: ctx.config.rolloutTimeoutMs,
    signal: ctx.signal,
    telemetry: ctx.telemetry,
    log: ctx.log,
  });
  const seconds = (ctx.now() - started) / 1000;
  for (const key of a.images) {
    const repo = ctx.config.images.find((i) => i.key === key)?.repository ?? key;
    ctx.telemetry.histogram("image_refresh.rollout.duration", seconds, {
      ...baseAttrs(run),
      "container.image.name": repo,
      "image_refresh.rollout.ok": r.ok,
    });
  }
  if (!r.ok) {
    // Say why the wait was cut short (SIGTERM, the tick's deadline): an operator reading the
    // Job's log must not mistake a drained node for a flapping workload.
    const cut = ctx.signal.aborted
      ? `; the tick was stopped: ${(ctx.signal.reason as Error)?.message ?? "aborted"}`
      : "";
    throw new Stop({
      outcome: "failed",
      reason: "rollout_failed",
      message: `rollout of ${what} did not settle (${r.reason}): ${r.message}${cut}`,
    });
  }
  ctx.log.info(`${what} rolled out: ${r.message}`);
}

/**
 * The reset is its own request so that a failed digest write can never strand a lockout. Its
 * precondition is a JSON-patch `test` on the count this tick wrote rather than the
 * resourceVersion: the state object may be the workload that just rolled out, and every status
 * write of its controller moves the resourceVersion without touching the counter.
 */
async function reset(run: Run, keys: string[]): Promise<void> {
  const [attemptKey] = keys as [string];
  const ours = run.annotations[attemptKey];
  for (let attempt = 1; ; attempt++) {
    const ops: object[] = [];
    const current = run.annotations[attemptKey];
    // Another tick (a manual Job) wrote a count of its own since ours: that count belongs to its
    // rollout, which may still fail. Removing it would lose that failure; a rearm (absent) is fine.
    if (current !== undefined && current !== ours) {
      run.ctx.log.warn(
        `not resetting ${attemptKey} on ${describeState(run)}: it is ${current} now, written by another tick after this one wrote ${ours}`,
      );
      return;
    }
    if (current !== undefined) ops.push({ op: "test", path: annotationPointer(attemptKey), value: current });
    for (const k of keys)
      if (run.annotations[k] !== undefined) ops.push({ op: "remove", path: annotationPointer(k) });
    try {
      if (ops.length > 0) await jsonPatchState(run, ops);
      break;
    } catch (err) {
      const lost = err instanceof ApiError && (err.code === 409 || err.code === 422);
      if (lost && attempt < 4) {
        await refreshVersion(run).catch(() => {});
        continue;
      }
      throw new Stop({
        outcome: "failed",
        reason: "reset_failed",
        message: `rolled out, but cannot reset the attempt counter on ${describeState(run)}: ${(err as Error).message}`,
      });
    }
  }
  run.attemptCount = 0;
  run.root.addEvent("reset");
  run.ctx.telemetry.counter("image_refresh.resets", 1, baseAttrs(run));
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

function remember(run: Run, updated: Workload): void {
  run.rv = updated.metadata.resourceVersion;
  run.annotations = updated.metadata.annotations;
}

/** `<prefix>/last-refreshed-<key>-digest` for each image key. */
function digestAnnotations(keys: AnnotationKeys, digests: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(digests).map(([k, d]) => [keys.digest(k), d]));
}

async function recordDigests(run: Run, digests: Record<string, string>): Promise<void> {
  const keys = annotationKeys(run.ctx.config.annotationPrefix);
  const annotations = digestAnnotations(keys, digests);
  try {
    // Digests are facts, not counters: no precondition, so a controller's status write cannot fail it.
    await patchState(run, annotations, false);
  } catch (err) {
    const outcome: Outcome = run.rolledOut ? "failed" : "error";
    throw new Stop({
      outcome,
      reason: "record_failed",
      message: `cannot record digests on ${describeState(run)}: ${(err as Error).message}`,
    });
  }
  run.ctx.log.info(
    `recorded ${Object.entries(digests)
      .map(([k, d]) => `${k}=${d}`)
      .join(" ")}`,
  );
}

async function postEvent(run: Run, a: Extract<Action, { type: "event" }>): Promise<void> {
  const { ctx } = run;
  if (ctx.dryRun) {
    ctx.log.info(`dry run: would post a ${a.eventType} Event ${a.reason}`, { note: a.note });
    return;
  }
  try {
    const s = ctx.config.state;
    const event = buildEvent(
      {
        regarding: run.obs.state,
        type: a.eventType,
        reason: a.reason,
        action: "Refresh",
        note: a.note,
        reportingInstance: ctx.instance,
      },
      { now: () => new Date(ctx.now()) },
    );
    await ctx.kube.createEvent(s.namespace, event);
  } catch (err) {
    ctx.log.warn(`cannot post the ${a.reason} Event; going on`, { error: (err as Error).message });
  }
}
