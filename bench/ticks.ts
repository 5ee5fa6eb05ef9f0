// Cold start and peak memory (2), and the refresh tick (3).
import { join } from "node:path";
import { BINARY, outcomeOf, runLimit, runProduct } from "./clients.ts";
import { type Client, compare, type Measured } from "./compare.ts";
import {
  fmtMb,
  fmtMs,
  hasGnuTime,
  peakRssMb,
  ratio,
  repeat,
  type Spawned,
  type Stats,
  span,
  stats,
  TIME,
  table,
  timed,
  verdict,
} from "./measure.ts";
import { type BenchContext, limitOk, recordedWorld } from "./noop.ts";
import { type BenchWorld, startBenchWorld } from "./world.ts";

const env = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" });

/**
 * The budget: `version`, `--help` and a tick with telemetry off start within 2x of the floor. A command
 * that only prints has started when it has exited; a tick has started when it reaches for the
 * cluster: its first TCP connection to the API server, after the config and kubeconfig are read
 * and validated and before the TLS handshake (which the limit script pays alike).
 */
export async function coldStartSection(ctx: BenchContext, floor: string[]): Promise<string[]> {
  ctx.log("2. cold start and peak RSS");
  const n = Math.max(20, ctx.reps * 2);
  const exits0 = (r: Spawned) => r.code === 0;
  // A slow controller step: every workload is settled, and a 2 ms timer in this process would
  // load the machine under every row alike.
  const w = await recordedWorld({ relay: true, stepMs: 100 });
  try {
    const noop = (r: Spawned) => r.code === 0 && outcomeOf(r) === "noop";
    const files = ["tick", "--config", w.configPath, "--kubeconfig", w.kubeconfigPath];
    const clients: Client[] = [
      { name: "floor: compiled Bun, one write (bench/floor.ts)", run: () => timed(floor, env()), ok: exits0 },
      { name: "`image-refresh version`", run: () => timed([BINARY, "version"], env()), ok: exits0 },
      { name: "`image-refresh --help`", run: () => timed([BINARY, "--help"], env()), ok: exits0 },
      { name: TICK_ROW, run: () => timed([BINARY, ...files], w.env()), ok: noop },
      { name: "limit (compiled), to its first connection", run: () => runLimit(w, ctx.limit), ok: limitOk },
    ];
    const b = ctx.baseline;
    if (b)
      clients.push(
        {
          name: `\`version\` at ${b.ref} (baseline)`,
          run: () => timed([...b.command, "version"], env()),
          ok: exits0,
        },
        {
          name: `\`--help\` at ${b.ref} (baseline)`,
          run: () => timed([...b.command, "--help"], env()),
          ok: exits0,
        },
        {
          name: `tick at ${b.ref} (baseline), to its first connection`,
          run: () => timed([...b.command, ...files], w.env()),
          ok: noop,
        },
      );
    return startTable(await compare(w, clients, n), n);
  } finally {
    await w.stop();
  }
}

const TICK_ROW = "`image-refresh tick`, telemetry off, to its first connection";

function startTable(ms: Measured[], n: number): string[] {
  const [fl, version, help, tick, limit] = ms as [Measured, Measured, Measured, Measured, Measured];
  // A client that connects has started at its first connection; one that never does, at its exit.
  const start = (m: Measured): Stats => m.firstConnection ?? m.ms;
  const rows = ms.map((m) => [
    m.name,
    fmtMs(start(m)),
    ratio(start(m).median, fl.ms.median),
    m.firstConnection
      ? `(whole tick ${m.ms.median.toFixed(1)} ms)`
      : `${m.cpu.median.toFixed(1)} ms (+${(m.cpu.median - fl.cpu.median).toFixed(1)})`,
  ]);
  const within = (m: Measured) =>
    `${ratio(start(m).median, fl.ms.median)} ${verdict(start(m).median <= 2 * fl.ms.median)}`;
  return [
    `### 2. Cold start (${n} runs each)`,
    "",
    ...table(["command", "start: median (min–max)", "start × floor", "CPU user+sys: median (+ floor)"], rows),
    "",
    "- Start: spawn to exit for a command that only prints; spawn to the first TCP connection the API server accepts for a tick (config and kubeconfig read and validated, before the TLS handshake).",
    `- Within 2× of the floor (the budget): \`version\` ${within(version)}, \`--help\` ${within(help)}, tick ${within(tick)}. The floor is ${fl.ms.median.toFixed(1)} ms; the limit script, which validates nothing, connects at ${start(limit).median.toFixed(1)} ms, so the tick's own start-up above it is ${(start(tick).median - start(limit).median).toFixed(1)} ms.`,
    "",
  ];
}

/** Peak RSS of a no-op and a refresh tick; needs GNU time. */
export async function memoryRows(ctx: BenchContext, floor: string[]): Promise<string[]> {
  if (!hasGnuTime())
    return [`- Peak RSS not measured: ${TIME} is missing (Debian/Ubuntu: \`apt-get install time\`).`, ""];
  const reps = ctx.quick ? 3 : 5;
  const ok0 = (r: Spawned) => r.code === 0;
  const rss = (cmd: string[], e: Record<string, string>, ok = ok0) =>
    repeat(reps, () => peakRssMb(cmd, e, ok));
  const w = await startBenchWorld();
  try {
    const files = ["--config", w.configPath, "--kubeconfig", w.kubeconfigPath];
    await runProduct(w); // records the digests: the ticks below are no-ops
    const noop = await rss([BINARY, "tick", ...files], w.env(), (r) => ok0(r) && outcomeOf(r) === "noop");
    const refresh = await repeat(reps, () => {
      w.pushAll();
      return peakRssMb([BINARY, "tick", ...files], w.env(), (r) => ok0(r) && outcomeOf(r) === "refreshed");
    });
    const rows = [
      ["floor (bench/floor.ts)", fmtMb(await rss(floor, env()))],
      ["`image-refresh version`", fmtMb(await rss([BINARY, "version"], env()))],
      ["no-op tick", fmtMb(noop)],
      ["refresh tick (4 workloads re-imaged)", fmtMb(refresh)],
    ];
    const worst = Math.max(noop.max, refresh.max);
    const fleet = await fleetRss(ctx.quick ? 1 : 3);
    rows.push(
      ["no-op tick, 500 workloads over 200 images", fmtMb(fleet.noop)],
      ["refresh tick, 500 workloads over 200 images re-imaged", fmtMb(fleet.refresh)],
    );
    return [
      `Peak RSS (GNU time's maximum resident set size of the process, ${reps} runs each; at 500 workloads ${ctx.quick ? 1 : 3}):`,
      "",
      ...table(["process", "peak RSS: median (min–max)"], rows),
      "",
      `- Peak RSS ≤ 60 MB in the bench's world: ${verdict(worst <= 60)} (worst ${worst.toFixed(1)} MB).`,
      `- Peak RSS ≤ 64 MB at 500 workloads, refresh included: ${verdict(Math.max(fleet.noop.max, fleet.refresh.max) <= 64)} (worst ${Math.max(fleet.noop.max, fleet.refresh.max).toFixed(1)} MB).`,
      "",
    ];
  } finally {
    await w.stop();
  }
}

/** Peak RSS of a no-op and a refresh tick at 500 workloads over 200 images (500 rollouts each refresh). */
async function fleetRss(reps: number): Promise<{ noop: Stats; refresh: Stats }> {
  const w = await startBenchWorld({ scale: { targets: 500, maxRepos: 200 }, stepMs: 2 });
  try {
    const files = ["--config", w.configPath, "--kubeconfig", w.kubeconfigPath];
    await runProduct(w);
    const tick = (outcome: string) =>
      peakRssMb([BINARY, "tick", ...files], w.env(), (r) => r.code === 0 && outcomeOf(r) === outcome);
    const noop = await repeat(reps, () => tick("noop"));
    const refresh = await repeat(reps, () => {
      w.pushAll();
      return tick("refreshed");
    });
    return { noop, refresh };
  } finally {
    await w.stop();
  }
}

interface RefreshRun {
  ms: number;
  waitMs: number;
  api: Record<string, number>;
  registry: number;
}

/** Sum of the rollout waits, from the JSON log: "patched X ..." until "X rolled out ...". */
export function rolloutWaitMs(stderr: string): number {
  let total = 0;
  let since: number | undefined;
  for (const line of stderr.split("\n")) {
    if (!line.startsWith("{")) continue;
    const rec = JSON.parse(line) as { time: string; msg: string };
    if (rec.msg.startsWith("patched ")) since = Date.parse(rec.time);
    else if (since !== undefined && rec.msg.includes(" rolled out")) {
      total += Date.parse(rec.time) - since;
      since = undefined;
    }
  }
  return total;
}

const lastJson = (stderr: string) => JSON.parse(stderr.trimEnd().split("\n").at(-1) ?? "{}");

async function refreshOnce(w: BenchWorld): Promise<RefreshRun> {
  w.pushAll();
  w.clearLogs();
  const r = await runProduct(w, ["tick", "--log-format", "json"]);
  if (r.code !== 0 || lastJson(r.stderr).outcome !== "refreshed")
    throw new Error(`Cannot benchmark the refresh tick: exit ${r.code}\n${r.stderr}`);
  const api: Record<string, number> = {};
  for (const e of w.api.log) {
    const kind = e.query.watch ? "WATCH" : e.method;
    api[kind] = (api[kind] ?? 0) + 1;
  }
  return { ms: r.ms, waitMs: rolloutWaitMs(r.stderr), api, registry: w.registry.log.length };
}

export async function refreshSection(ctx: BenchContext): Promise<string[]> {
  ctx.log("3. refresh tick");
  const w = await startBenchWorld({ stepMs: 2 });
  try {
    await runProduct(w);
    const runs: RefreshRun[] = [];
    for (let i = 0; i < ctx.reps; i++) runs.push(await refreshOnce(w));
    const total = stats(runs.map((r) => r.ms));
    const wait = stats(runs.map((r) => r.waitMs));
    const outside = stats(runs.map((r) => r.ms - r.waitMs));
    const kinds = [...new Set(runs.flatMap((r) => Object.keys(r.api)))].sort();
    const apiTotal = runs.map((r) => Object.values(r.api).reduce((a, b) => a + b, 0));
    const breakdown = kinds.map((k) => `${k} ${span(runs.map((r) => r.api[k] ?? 0))}`).join(", ");
    return [
      "### 3. Refresh tick (3 images changed, 4 workloads re-imaged, healthy rollouts, controller step 2 ms)",
      "",
      ...table(
        ["measure", "ms: median (min–max)"],
        [
          ["whole tick (spawn to exit)", fmtMs(total)],
          ["rollout waits (patched → rolled out, from the JSON log)", fmtMs(wait)],
          ["everything else", fmtMs(outside)],
        ],
      ),
      "",
      `- Requests: API ${span(apiTotal)} (${breakdown}), registry ${span(runs.map((r) => r.registry))}.`,
      "",
    ];
  } finally {
    await w.stop();
  }
}

export const floorSource = join(import.meta.dir, "floor.ts");
