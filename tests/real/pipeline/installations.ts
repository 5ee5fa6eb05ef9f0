// Installations of image-refresh, each with its own simulated cluster and registry (tests/world.ts)
// and its own state object, ticked by the compiled binary on a compressed CronJob schedule
// (concurrencyPolicy: Forbid, as k8s/base/cronjob.yaml: a tick still running skips the next).
import { startWorld, type World } from "../../support/world.ts";
import { ms, REAL } from "./compress.ts";
import { stateObject } from "./identity.ts";

export type Protocol = "http/protobuf" | "http/json";

export interface TickRun {
  n: number;
  args: string[];
  start: number;
  end: number;
  code: number;
  stderr: string;
}

export interface Installation {
  name: string;
  world: World;
  /** False while its CronJob does not run. */
  active: boolean;
  protocol: Protocol;
  runs: TickRun[];
  /** Called before tick n (0-based); may change the world, deactivate, or mark a moment. */
  before?: (n: number, i: Installation) => void | Promise<void>;
  /** Named moments (Date.now()) the scenario marks: when a cause began, when it was gone. */
  marks: Record<string, number>;
  mark(name: string): void;
  /** Runs a command (rearm) with the same telemetry as the ticks. */
  command(args: string[]): Promise<TickRun>;
}

export async function startInstallation(
  name: string,
  protocol: Protocol,
  otlpUrl: () => string,
): Promise<Installation> {
  const world = await startWorld();
  const s = stateObject(name);
  world.api.addWorkload({
    ...s,
    replicas: 1,
    containers: [{ name: "pause", image: "registry.k8s.io/pause:3.10" }],
  });
  world.writeConfig((c) => {
    c.state = s;
    // Targets without a namespace are in the state object's: keep them where the scenario put them.
    for (const img of c.images) for (const t of img.targets) t.namespace ??= "apps";
  });
  const runs: TickRun[] = [];
  const run = async (args: string[], n: number): Promise<TickRun> => {
    const start = Date.now();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl(), OTEL_EXPORTER_OTLP_PROTOCOL: protocol };
    const r = await world.run(args, env);
    const t: TickRun = { n, args, start, end: Date.now(), code: r.code, stderr: r.stderr };
    runs.push(t);
    return t;
  };
  const inst: Installation = {
    name,
    world,
    active: true,
    protocol,
    runs,
    marks: {},
    mark(m) {
      inst.marks[m] = Date.now();
    },
    command: (args) => run(args, -1),
  };
  ticker.set(inst, run);
  return inst;
}

const ticker = new WeakMap<Installation, (args: string[], n: number) => Promise<TickRun>>();

export interface Schedule {
  stop(): Promise<void>;
}

/** Ticks every installation on the compressed schedule until stop(). */
export function schedule(installations: Installation[], every = ms(REAL.tick)): Schedule {
  let stopped = false;
  const counts = new Map<Installation, number>();
  const running = new Map<Installation, Promise<unknown>>();
  const fire = () => {
    for (const i of installations) {
      if (!i.active || running.has(i)) continue;
      const n = counts.get(i) ?? 0;
      const p = (async () => {
        await i.before?.(n, i);
        if (!i.active) return;
        counts.set(i, n + 1);
        await (ticker.get(i) as (a: string[], n: number) => Promise<TickRun>)(["tick"], n);
      })().finally(() => running.delete(i));
      running.set(i, p);
    }
  };
  fire();
  const timer = setInterval(() => !stopped && fire(), every);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(running.values());
    },
  };
}

/** The ticks of an installation (not its commands). */
export const ticksOf = (i: Installation) => i.runs.filter((r) => r.n >= 0);
