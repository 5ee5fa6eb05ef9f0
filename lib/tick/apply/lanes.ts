// The rollouts of one tick, group by group. Images that share no workload are independent groups
// (the plan numbers them and tags each rollout with its group); up to `parallelism` groups roll
// out at once, each in its own lane. Inside a lane the group's workloads go one at a time, in the
// plan's (config) order, so its first workload is the canary of the rest, and its failure, revert,
// count and Events stay its own: rolloutGroup only ever touches its own group. Each lane logs with
// `group=N` and tags its spans with `image_refresh.group` (N counts from 1, in config order).
import type { Fields, Logger } from "../../log.ts";
import type { Telemetry } from "../../telemetry.ts";
import type { Rollout } from "../model.ts";
import { rolloutGroup } from "./rollouts.ts";
import type { Run } from "./state.ts";

/** The rollouts of each group, in plan order, groups in the order of their first rollout: one lane each. */
export function lanesOf(rollouts: readonly Rollout[]): Rollout[][] {
  const lanes = new Map<number, Rollout[]>();
  for (const r of rollouts) lanes.set(r.group, [...(lanes.get(r.group) ?? []), r]);
  return [...lanes.values()];
}

/**
 * Runs every item with at most `width` at once, the next starting as soon as one ends. Every item
 * runs to its end before this returns, even when another threw (a lane half-way through a
 * rollout must still revert it); then the first error is thrown.
 */
export async function inParallel<T>(
  items: readonly T[],
  width: number,
  each: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await each(items[next++] as T);
  };
  const workers = Array.from({ length: Math.max(1, Math.min(width, items.length)) }, worker);
  const ended = await Promise.allSettled(workers);
  const failed = ended.find((e) => e.status === "rejected");
  if (failed) throw failed.reason;
}

/** Rolls out the plan's rollouts, up to config.parallelism groups at once. */
export async function rollOut(run: Run, rollouts: readonly Rollout[]): Promise<void> {
  await inParallel(lanesOf(rollouts), run.ctx.config.parallelism, async (lane) => {
    const mine = laneRun(run, (lane[0] as Rollout).group + 1);
    for (const r of lane) await rolloutGroup(mine, r);
  });
}

/**
 * The run as one lane sees it: the same shared state (every read and write goes to `run`), with a
 * logger and telemetry that say which group each line and span belongs to.
 */
function laneRun(run: Run, group: number): Run {
  const ctx = {
    ...run.ctx,
    log: withFields(run.ctx.log, { group }),
    telemetry: withSpanAttributes(run.ctx.telemetry, { "image_refresh.group": group }),
  };
  return new Proxy(run, {
    get: (target, p, receiver) => (p === "ctx" ? ctx : Reflect.get(target, p, receiver)),
  });
}

function withFields(log: Logger, fields: Fields): Logger {
  const add = (level: keyof Logger) => (msg: string, own?: Fields) => log[level](msg, { ...own, ...fields });
  return { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
}

function withSpanAttributes(t: Telemetry, attributes: Record<string, number>): Telemetry {
  return {
    ...t,
    span: (name, opts, fn) =>
      t.span(name, { ...opts, attributes: { ...opts.attributes, ...attributes } }, fn),
  };
}
