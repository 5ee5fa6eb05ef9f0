// Runs several clients against one world in turns (A B C A B C ...), so that a burst of load on
// the machine lands on all of them alike and their ratios stay meaningful.
import { type Spawned, type Stats, stats } from "./measure.ts";
import type { BenchWorld } from "./world.ts";

export interface Client {
  name: string;
  run(): Promise<Spawned>;
  /** What a correct run looks like; a run that fails it aborts the bench. */
  ok(r: Spawned): boolean;
  /** Defaults to the bench's repetition count; the kubectl way is slow and needs fewer. */
  reps?: number;
}

export interface Measured {
  name: string;
  ms: Stats;
  cpu: Stats;
  /** Spawn to the first request the sims saw: start-up and set-up before any network work. */
  firstRequest?: Stats;
  /** Spawn to the first TCP connection the API server accepted: the client's start-up. */
  firstConnection?: Stats;
  api: number[];
  registry: number[];
  /** The requests of the last run, to name what one client sends that another does not. */
  lastRequests: string[];
}

/** What compare() reads from a world: its request logs. */
export type Logs = Pick<
  BenchWorld,
  "clearLogs" | "counts" | "firstRequestAt" | "firstConnectionAt" | "requests"
>;

/** For clients that make no requests (cold start). */
export const NO_LOGS: Logs = {
  clearLogs() {},
  counts: () => ({ api: 0, registry: 0 }),
  firstRequestAt: () => undefined,
  firstConnectionAt: () => undefined,
  requests: () => [],
};

export async function compare(w: Logs, clients: Client[], reps: number): Promise<Measured[]> {
  const out = clients.map((c) => ({
    c,
    ms: [] as number[],
    cpu: [] as number[],
    first: [] as number[],
    connected: [] as number[],
    api: [] as number[],
    registry: [] as number[],
    last: [] as string[],
  }));
  const most = Math.max(...clients.map((c) => c.reps ?? reps));
  for (let i = 0; i < most; i++) {
    for (const o of out) {
      if (i >= (o.c.reps ?? reps)) continue;
      w.clearLogs();
      const r = await o.c.run();
      if (!o.c.ok(r))
        throw new Error(`Cannot benchmark ${o.c.name}: exit ${r.code}\n${r.stdout}\n${r.stderr}`.trimEnd());
      // Counted after exit: a process that exits has sent everything it will send.
      const n = w.counts();
      o.ms.push(r.ms);
      o.cpu.push(r.cpuMs);
      const first = w.firstRequestAt();
      if (first !== undefined) o.first.push(first - r.startedAt);
      const connected = w.firstConnectionAt();
      if (connected !== undefined) o.connected.push(connected - r.startedAt);
      o.api.push(n.api);
      o.registry.push(n.registry);
      o.last = w.requests();
    }
  }
  return out.map((o) => ({
    name: o.c.name,
    ms: stats(o.ms),
    cpu: stats(o.cpu),
    firstRequest: o.first.length ? stats(o.first) : undefined,
    firstConnection: o.connected.length ? stats(o.connected) : undefined,
    api: o.api,
    registry: o.registry,
    lastRequests: o.last,
  }));
}
