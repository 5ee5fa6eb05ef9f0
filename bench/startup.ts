// Section 6: a tick's start-up part by part. The binary marks named points of its start-up when
// IMAGE_REFRESH_STARTUP_TIMING names a file (lib/startup-timing.ts); the relay in front of the
// simulated API server times the first TCP connection and the simulator the first request. The
// tick runs in turns with the floor and the limit script, so the parts sit beside the two
// figures the budget compares them with. A few more runs of each, apart from the timed ones,
// count the functions run by each step (IMAGE_REFRESH_STARTUP_FUNCTIONS; LIMIT_FUNCTIONS).
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { BINARY, outcomeOf, runLimit } from "./clients.ts";
import { type Client, compare, type Measured } from "./compare.ts";
import { fmtMs, type Spawned, stats, table, timed } from "./measure.ts";
import { type BenchContext, limitOk, recordedWorld } from "./noop.ts";

/** The binary's marks in the order a tick reaches them, each with what the step before it did. */
export const PARTS: Array<[mark: string, what: string]> = [
  ["entry", "runtime start, loading the executable, evaluating the entry chunk (command line, outcomes)"],
  ["chunks-loaded", "loading the runtime's chunks (zod is not evaluated on a valid run: lib/zod.ts)"],
  ["config-module", "evaluating the config's helpers (module evaluation)"],
  [
    "config-schema",
    "building the config's zod schema (only when a file is refused: absent from a valid run)",
  ],
  [
    "runtime-module",
    "evaluating the rest of the runtime's modules (kubeconfig, API and registry clients, log)",
  ],
  ["imported", "the import of the error classes and the hand-over"],
  ["config-parsed", "reading the config file, parsing its YAML (Bun.YAML and the repeated-key screen)"],
  ["config-checked", "checking it with the check compiled from the config's zod schema"],
  ["config", "defaults, durations and the checks across fields"],
  ["kubeconfig-parsed", "reading the kubeconfig, parsing its YAML"],
  ["kubeconfig-checked", "checking it with the check compiled from its zod schema"],
  ["kubeconfig", "context, cluster, user, the CA and token"],
  ["telemetry", "registry credentials, telemetry off, the logger"],
  ["runtime", "the API client (TLS options built)"],
  ["tick-imported", "evaluating the tick's modules (observe, plan, apply)"],
  ["first-fetch", "up to the fetch of the tick's first API request"],
  ["store-answered", "the store's answer parsed into the book (the other target reads in flight)"],
  ["registry-start", "the registry's resolution started (the stored Retry-After read)"],
  [
    "registry-authorized",
    "the registry's token (after a probe of GET /v2/ only when the store keeps no answer of it)",
  ],
  ["reads-answered", "every target workload read"],
  ["resolved", "every repository's HEAD"],
  ["planned", "the plan (pure) decided"],
  ["applied", "nothing to write: the apply step"],
  ["reported", "the tick's metrics and outcome line"],
  ["exit", "until the exit is called"],
];

export interface StartupRun {
  /** Spawn to each mark, ms. */
  at: Record<string, number>;
  /** CPU time the process had used at each mark, ms: steadier than wall time on a loaded machine. */
  cpu: Record<string, number>;
  /** Functions run so far at each mark, in the runs that count them. */
  functions?: Record<string, number>;
  connected?: number;
  firstRequest?: number;
}

/** Runs of each binary with the count on: it walks the heap, so they are not the timed runs. */
const COUNTED_RUNS = 3;

/** The counted runs: the tick's marks with their counts, and the limit script's count at its end. */
interface Counted {
  ticks: StartupRun[];
  limit: number[];
}

/** One tick with the probe on; its marks, the relay's connection and the first request, from the spawn. */
async function probedTick(
  cmd: string[],
  env: Record<string, string>,
  file: string,
  runs: StartupRun[],
): Promise<Spawned> {
  rmSync(file, { force: true });
  const r = await timed(cmd, { ...env, IMAGE_REFRESH_STARTUP_TIMING: file });
  const marks = JSON.parse(readFileSync(file, "utf8").trim().split("\n").at(-1) ?? "{}") as {
    at: Record<string, number>;
    cpu: Record<string, number>;
    functions?: Record<string, number>;
  };
  const at: Record<string, number> = {};
  for (const [k, v] of Object.entries(marks.at)) at[k] = v - r.startedAt;
  runs.push({ at, cpu: marks.cpu, ...(marks.functions ? { functions: marks.functions } : {}) });
  return r;
}

/** The functions a tick runs by each mark, and the limit script by its end. */
async function countFunctions(
  w: Awaited<ReturnType<typeof recordedWorld>>,
  cmd: string[],
  limit: string[],
): Promise<Counted> {
  const file = join(w.dir, "counted-marks.jsonl");
  const counts = join(w.dir, "limit-functions.txt");
  const ticks: StartupRun[] = [];
  const limitCounts: number[] = [];
  for (let i = 0; i < COUNTED_RUNS; i++) {
    const r = await probedTick(cmd, w.env({ IMAGE_REFRESH_STARTUP_FUNCTIONS: "1" }), file, ticks);
    if (r.code !== 0 || outcomeOf(r) !== "noop") throw new Error(`counted tick: ${r.stderr.slice(-300)}`);
    rmSync(counts, { force: true });
    const l = await runLimit(w, limit, { LIMIT_FUNCTIONS: counts });
    if (!limitOk(l)) throw new Error(`counted limit: ${l.stderr.slice(-300)}`);
    limitCounts.push(Number(readFileSync(counts, "utf8").trim()));
  }
  return { ticks, limit: limitCounts };
}

export async function startupSection(ctx: BenchContext, floor: string[]): Promise<string[]> {
  ctx.log("6. a tick's start-up, part by part");
  const n = Math.max(20, ctx.reps * 2);
  const w = await recordedWorld({ relay: true, stepMs: 100 });
  const file = join(w.dir, "startup-marks.jsonl");
  const runs: StartupRun[] = [];
  try {
    const files = ["tick", "--config", w.configPath, "--kubeconfig", w.kubeconfigPath];
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" };
    const tick: Client = {
      name: "tick (probe on)",
      run: async () => {
        const r = await probedTick([BINARY, ...files], w.env(), file, runs);
        const last = runs.at(-1) as StartupRun;
        const c = w.firstConnectionAt();
        const q = w.firstRequestAt();
        if (c !== undefined) last.connected = c - r.startedAt;
        if (q !== undefined) last.firstRequest = q - r.startedAt;
        return r;
      },
      ok: (r) => r.code === 0 && outcomeOf(r) === "noop",
    };
    const ms = await compare(
      w,
      [
        { name: "floor", run: () => timed(floor, env), ok: (r) => r.code === 0 },
        tick,
        { name: "limit", run: () => runLimit(w, ctx.limit), ok: limitOk },
      ],
      n,
    );
    const counted = await countFunctions(w, [BINARY, ...files], ctx.limit);
    return partsTable(runs, ms as [Measured, Measured, Measured], n, counted);
  } finally {
    await w.stop();
  }
}

const median = (xs: number[]) => stats(xs).median;

function partsTable(
  runs: StartupRun[],
  [fl, , limit]: [Measured, Measured, Measured],
  n: number,
  counted: Counted,
): string[] {
  const rows: string[][] = [];
  const atOf = (name: string) => runs.map((r) => r.at[name] ?? Number.NaN);
  // In the order the tick reaches them (the first fetch may come before the tick's modules load).
  // A part no run reached (the zod schemas are built only for a file that is refused) has no row.
  const reached = PARTS.filter(([name]) => runs.some((r) => r.at[name] !== undefined));
  const order = reached.sort((a, b) => median(atOf(a[0])) - median(atOf(b[0])));
  const cpuOf = (name: string) => runs.map((r) => r.cpu[name] ?? Number.NaN);
  const functionsOf = (name: string) => counted.ticks.map((r) => r.functions?.[name] ?? Number.NaN);
  let prev = "spawn";
  let prevAt = runs.map(() => 0);
  let prevCpu = runs.map(() => 0);
  let prevFunctions = counted.ticks.map(() => 0);
  for (const [name, what] of order) {
    const at = atOf(name);
    const cpu = cpuOf(name);
    const functions = functionsOf(name);
    const step = stats(at.map((a, i) => a - (prevAt[i] as number)));
    const cpuStep = median(cpu.map((c, i) => c - (prevCpu[i] as number)));
    const ran = median(functions.map((f, i) => f - (prevFunctions[i] as number)));
    const cells = [fmtMs(step), cpuStep.toFixed(2), Number.isNaN(ran) ? "–" : String(ran)];
    rows.push([`${prev} → ${name}`, what, ...cells, median(at).toFixed(1)]);
    prev = name;
    prevAt = at;
    prevCpu = cpu;
    prevFunctions = functions;
  }
  const fetched = atOf("first-fetch");
  const connected = runs.map((r) => r.connected ?? Number.NaN);
  const requested = runs.map((r) => r.firstRequest ?? Number.NaN);
  const between = (a: number[], b: number[]) => fmtMs(stats(b.map((x, i) => x - (a[i] as number))));
  rows.push(
    [
      "first-fetch → connection",
      "fetch until the TCP connection is accepted (the relay's clock)",
      between(fetched, connected),
      "–",
      "–",
      median(connected).toFixed(1),
    ],
    [
      "connection → first request",
      "TLS handshake and the request (the simulator's ms clock)",
      between(connected, requested),
      "–",
      "–",
      median(requested).toFixed(1),
    ],
  );
  const lc = limit.firstConnection?.median ?? Number.NaN;
  const tc = median(connected);
  return [
    `### 6. A tick's start-up, part by part (${n} runs, in turns with the floor and the limit)`,
    "",
    ...table(
      [
        "step",
        "what it does",
        "wall ms: median (min–max)",
        "CPU ms (median)",
        "functions run first (median)",
        "spawn → end of step (median)",
      ],
      rows,
    ),
    "",
    `- Floor (compiled Bun, one write): ${fl.ms.median.toFixed(1)} ms; the limit connects at ${lc.toFixed(1)} ms; the tick at ${tc.toFixed(1)} ms (${(tc / fl.ms.median).toFixed(2)}× the floor).`,
    `- The tick's connection against the limit's + one floor (${(lc + fl.ms.median).toFixed(1)} ms): ${tc <= lc + fl.ms.median ? "met" : "**MISSED**"} (${(tc - lc).toFixed(1)} ms later than the limit).`,
    `- Functions run by the exit (JavaScriptCore's code blocks, counted in ${COUNTED_RUNS} runs of each apart from the timed ones): the tick ${median(functionsOf("exit"))}, the limit script ${median(counted.limit)}. A function run for the first time costs its bytecode loaded and linked and a first pass in the interpreter.`,
    "",
  ];
}
