// The state of one apply run and the helpers every apply step shares (apply.ts, record.ts,
// rollouts.ts, revert.ts, workload-patch.ts import them from here, so none imports another's caller).
// Every bookkeeping write goes to the store, as one compare-and-swap on its resourceVersion;
// workloads are written only to set images (and, once migrated, to drop legacy annotations).
import { buildEvent, type EventSubject } from "../../kube/events.ts";
import type { Outcome } from "../../outcomes.ts";
import type { Book } from "../../state/book.ts";
import { type Change, merge, storeWrite } from "../../state/change.ts";
import { removableAnnotations } from "../../state/legacy.ts";
import { readStore, writeStore } from "../../state/store.ts";
import type { SpanHandle } from "../../telemetry.ts";
import { installation } from "../attributes.ts";
import type { TickContext } from "../context.ts";
import type { Action, ImageVerdict, Reason, TickRead, WorkloadRef } from "../model.ts";
import { describeWorkload, workloadId } from "../model.ts";

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

/** Another tick wrote the store since this one read it: re-read and decide again. */
export class StoreConflict extends Error {
  override name = "StoreConflict";
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
  /** What the tick read, as the decision carried it: the only input apply has besides the decision. */
  read: TickRead;
  root: SpanHandle;
  /** The store as of the last answer: every write is decided against its resourceVersion. */
  book: Book;
  /** Legacy annotations not yet carried into the store: they ride with the first write. */
  pending: Change;
  /** Legacy annotations already removed from the state workload this tick. */
  unlabelled: boolean;
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
  /** The attempts this tick persisted, by image key: the count it wrote and the build it tries. */
  attempts: Record<string, { count: number; digest: string }>;
  /** The store write in flight: lanes write one after another (writeBook). */
  storeTurn?: Promise<void>;
}

export function describeStore(run: { ctx: Pick<TickContext, "store"> }): string {
  return `ConfigMap ${installation(run.ctx)}`;
}

/**
 * One write of the store (with any legacy annotations still to carry): a create or a patch
 * guarded by the resourceVersion it was decided on. Throws StoreConflict when another tick
 * wrote first, else the ApiError.
 */
export function writeBook(run: Run, change: Change): Promise<void> {
  // Groups rolling out side by side end their attempts at any moment: their writes take turns,
  // so that two lanes of one tick never lose a compare-and-swap to each other.
  const turn = (run.storeTurn ?? Promise.resolve()).then(() => writeNow(run, change));
  run.storeTurn = turn.then(
    () => {},
    () => {},
  );
  return turn;
}

async function writeNow(run: Run, change: Change): Promise<void> {
  const all = merge(run.pending, change);
  if (run.ctx.dryRun) {
    const w = storeWrite(run.book, all);
    if (w.kind !== "none")
      run.ctx.log.info(`dry run: would ${w.kind} ${describeStore(run)}`, { data: w.data });
    return;
  }
  const r = await writeStore(run.ctx.kube.configMaps, run.ctx.store, run.book, all);
  if (r.kind === "conflict") throw new StoreConflict(r.message);
  run.pending = {};
  if (r.kind === "written") run.book = r.book;
  await dropLegacy(run);
}

/** A store write that re-reads and decides again when another tick wrote first (a few times). */
export async function withRetry(run: Run, decide: () => Change): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeBook(run, decide());
    } catch (err) {
      if (!(err instanceof StoreConflict) || attempt >= 4) throw err;
      run.ctx.log.info(`${describeStore(run)} changed concurrently; reading it again and deciding again`);
      await rereadBook(run);
    }
  }
}

/** The tick's clock (the store GET's `Date`), for every stored time. */
export const tickClock = (run: Run): number => run.read.clock ?? run.ctx.now();

/** Reads the store again after a conflict; the legacy values are not carried again. */
export async function rereadBook(run: Run): Promise<void> {
  if (run.ctx.dryRun) return;
  const keys = run.ctx.config.images.map((i) => i.key);
  run.book = (await readStore(run.ctx.kube.configMaps, run.ctx.store, keys)).book;
}

/**
 * Once the store holds what a legacy annotation said, it goes from the state workload: one merge
 * patch of nulls (an absent one is fine). A failed removal is a WARNING; the next tick retries.
 */
export async function dropLegacy(run: Run): Promise<void> {
  const legacy = run.read.legacy;
  if (!legacy || run.unlabelled || run.ctx.dryRun || run.book.resourceVersion === undefined) return;
  const names = removableAnnotations(run.book, legacy.input);
  if (names.length === 0) return;
  run.unlabelled = true;
  const annotations = Object.fromEntries(names.map((n) => [n, null]));
  try {
    await run.ctx.kube.mergePatch(legacy.ref, { metadata: { annotations } });
    run.ctx.log.info(
      `migrated to ${describeStore(run)}: removed ${names.join(", ")} from ${describeWorkload(legacy.ref)}`,
    );
  } catch (err) {
    run.ctx.log.warn(
      `cannot remove the migrated annotations from ${describeWorkload(legacy.ref)}; the next tick retries`,
      {
        error: (err as Error).message,
      },
    );
  }
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

/** The workloads an image's Events are about: its targets. */
export function targetsOfImages(run: Run, keys: readonly string[]): WorkloadRef[] {
  const seen = new Map<string, WorkloadRef>();
  for (const img of run.ctx.config.images)
    if (keys.includes(img.key))
      for (const t of img.targets)
        seen.set(workloadId(t), { kind: t.kind, namespace: t.namespace, name: t.name });
  return [...seen.values()];
}

/** Posts the Event about each workload it concerns; a failure is a WARNING, never the tick's. */
export async function postEvent(
  run: { ctx: TickContext; read: Pick<TickRead, "objects"> },
  a: Omit<Extract<Action, { type: "event" }>, "regarding" | "type">,
  regarding: ReadonlyArray<WorkloadRef | EventSubject>,
): Promise<void> {
  const { ctx } = run;
  for (const r of regarding) {
    const object = "metadata" in r ? r : run.read.objects.get(workloadId(r));
    const what = describeWorkload("metadata" in r ? { kind: r.kind, ...r.metadata } : r);
    if (ctx.dryRun) {
      ctx.log.info(`dry run: would post a ${a.eventType} Event ${a.reason} about ${what}`, { note: a.note });
      continue;
    }
    if (!object) {
      ctx.log.warn(`cannot post the ${a.reason} Event about ${what}: it was not read`);
      continue;
    }
    try {
      const event = buildEvent(
        {
          regarding: object,
          type: a.eventType,
          reason: a.reason,
          action: "Refresh",
          note: a.note,
          reportingInstance: ctx.instance,
        },
        { now: () => new Date(ctx.now()) },
      );
      await ctx.kube.createEvent(object.metadata.namespace ?? ctx.store.namespace, event);
    } catch (err) {
      ctx.log.warn(`cannot post the ${a.reason} Event about ${what}; going on`, {
        error: (err as Error).message,
      });
    }
  }
}
