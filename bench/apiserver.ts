// 9. What a no-op tick costs the real kube-apiserver: its CPU (utime + stime from
// /proc/<pid>/stat) read before and after each run of the product and of the limit, in turns, on
// the real tier's control plane (bench/fleet.ts). Both make the same GETs; the limit opens a
// connection per GET, all at once, the product pools its reads over at most 8 reused connections,
// and this is what that saves the server. Skipped with one line when the kube peer is not built:
// it needs binaries from Go modules, which the rest of the bench does not.

import { type Relay, startRelay } from "../sim/tcp-relay.ts";
import { peerBuilt } from "../tests/real/peers.ts";
import { BINARY, outcomeOf } from "./clients.ts";
import { type Fleet, REPOS, type Shape, startFleet } from "./fleet.ts";
import { fmtMs, ratio, type Spawned, type Stats, stats, table, timed } from "./measure.ts";
import { type BenchContext, isNoop, limitOk } from "./noop.ts";

const TITLE = "### 9. The API server's CPU per no-op tick (the real kube-apiserver)";
const SIZES = [50, 200];
/** Time left to the server after a client exits (its audit line, the connections' close) before the second reading. */
const SETTLE_MS = 100;
/** The idle window that tells the server's own background CPU (controllers' watches, its own loops). */
const IDLE_MS = 3000;

interface Side {
  name: string;
  run(s: Shape): Promise<Spawned>;
  ok(r: Spawned): boolean;
}

/** CPU time of `pid` in ms, user and system, from its stat line (fields 14 and 15, after the command's parentheses). */
export function cpuMsOf(stat: string, hz: number): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / hz;
}

async function cpuMs(pid: number, hz: number): Promise<number> {
  return cpuMsOf(await Bun.file(`/proc/${pid}/stat`).text(), hz);
}

function clockTicks(): number {
  const r = Bun.spawnSync(["getconf", "CLK_TCK"], { stdout: "pipe", stderr: "pipe" });
  const hz = Number(r.stdout.toString().trim());
  if (r.exitCode !== 0 || !(hz > 0)) throw new Error(`Cannot read CLK_TCK: getconf said ${r.stdout}`);
  return hz;
}

function sides(f: Fleet, limit: string[]): Side[] {
  return [
    {
      name: "product",
      run: (s) => timed([BINARY, "tick", "--config", s.configPath, "--kubeconfig", s.kubeconfigPath], f.env),
      ok: isNoop,
    },
    { name: "limit", run: (s) => timed([...limit, s.planPath], f.env), ok: limitOk },
  ];
}

const failed = (side: Side, n: number, r: Spawned) =>
  new Error(
    `Cannot benchmark the ${side.name} over ${n} workloads: exit ${r.code}\n${r.stdout}\n${r.stderr}`.trimEnd(),
  );

interface Measured {
  cpu: Stats;
  ms: Stats;
}

/** Each side `reps` times in turns, the API server's CPU read around each run. */
async function inTurns(
  f: Fleet,
  n: number,
  list: Side[],
  o: { reps: number; hz: number },
): Promise<Measured[]> {
  const s = f.shape(n);
  const cpu = list.map(() => [] as number[]);
  const ms = list.map(() => [] as number[]);
  for (let i = 0; i < o.reps; i++)
    for (const [k, side] of list.entries()) {
      const before = await cpuMs(f.apiserverPid, o.hz);
      const r = await side.run(s);
      await Bun.sleep(SETTLE_MS);
      const after = await cpuMs(f.apiserverPid, o.hz);
      if (!side.ok(r)) throw failed(side, n, r);
      cpu[k]?.push(after - before);
      ms[k]?.push(r.ms);
    }
  return list.map((_, k) => ({ cpu: stats(cpu[k] ?? []), ms: stats(ms[k] ?? []) }));
}

/** The connections each side opens to the API server, through a relay, in a run of its own. */
async function connections(f: Fleet, n: number, list: Side[]): Promise<number[]> {
  const upstream = new URL(f.cp.server);
  const relay: Relay = startRelay({ hostname: upstream.hostname, port: Number(upstream.port) });
  try {
    const s = f.shape(n, relay.url);
    const out: number[] = [];
    for (const side of list) {
      relay.clear();
      const r = await side.run(s);
      if (!side.ok(r)) throw failed(side, n, r);
      out.push(relay.connections.length);
    }
    return out;
  } finally {
    relay.stop();
  }
}

/** The first tick records the digests; then each side must be a no-op before it is measured. */
async function prepare(f: Fleet, n: number, list: Side[]): Promise<void> {
  const s = f.shape(n);
  const [product] = list as [Side];
  const first = await product.run(s);
  if (first.code !== 0 || outcomeOf(first) !== "recorded")
    throw new Error(`Cannot prepare ${n} workloads: the first tick ended ${first.code}\n${first.stderr}`);
  for (const side of list) {
    const r = await side.run(s);
    if (!side.ok(r)) throw failed(side, n, r);
  }
}

const cpuCell = (s: Stats) => `${s.median.toFixed(0)} ms (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;

async function row(ctx: BenchContext, f: Fleet, n: number, hz: number): Promise<string[]> {
  ctx.log(`   ${n} workloads`);
  const list = sides(f, ctx.limit);
  await prepare(f, n, list);
  const [p, l] = (await inTurns(f, n, list, { reps: ctx.reps, hz })) as [Measured, Measured];
  const [pc, lc] = (await connections(f, n, list)) as [number, number];
  return [
    String(n),
    cpuCell(p.cpu),
    cpuCell(l.cpu),
    ratio(p.cpu.median, l.cpu.median),
    fmtMs(p.ms),
    fmtMs(l.ms),
    `${pc} / ${lc}`,
  ];
}

async function idleMsPerS(f: Fleet, hz: number): Promise<number> {
  const before = await cpuMs(f.apiserverPid, hz);
  await Bun.sleep(IDLE_MS);
  return ((await cpuMs(f.apiserverPid, hz)) - before) / (IDLE_MS / 1000);
}

function report(ctx: BenchContext, rows: string[][], o: { hz: number; background: number }): string[] {
  return [
    TITLE,
    "",
    ...table(
      [
        "workloads",
        "product: API server CPU per tick, median (min–max)",
        "limit's",
        "product × limit",
        "product wall",
        "limit wall",
        "connections to the API server (product / limit)",
      ],
      rows,
    ),
    "",
    `- kube-apiserver's utime + stime (\`/proc/<pid>/stat\`, ${o.hz} ticks a second, so ${(1000 / o.hz).toFixed(0)} ms steps) from just before the spawn to ${SETTLE_MS} ms after the exit; the product and the limit in turns, ${ctx.reps} runs each. Both no-op ticks read the store and every Deployment (replicas 0, over ${REPOS} images) as admin with the kubeconfig's CA; the limit all at once, the product at most 8 at a time. Connections counted by a TCP relay in a run of its own.`,
    `- The server's own background, idle: ${o.background.toFixed(1)} ms of CPU a second (controllers' watches, its own loops), in every figure alike.`,
    "",
  ];
}

export async function apiserverSection(ctx: BenchContext): Promise<string[]> {
  ctx.log("9. the API server's CPU per no-op tick, on the real kube-apiserver");
  if (!peerBuilt("kube")) {
    const line = "- Skipped: needs the real peer kube (build it: `sh peers/build.sh kube`; needs Go).";
    ctx.log(line);
    return [TITLE, "", line, ""];
  }
  const hz = clockTicks();
  const started = performance.now();
  const most = Math.max(...SIZES);
  const f = await startFleet(most);
  const took = (performance.now() - started) / 1000;
  ctx.log(`   control plane, registry and ${most} Deployments ready in ${took.toFixed(0)} s`);
  try {
    const background = await idleMsPerS(f, hz);
    const rows: string[][] = [];
    for (const n of SIZES) rows.push(await row(ctx, f, n, hz));
    return report(ctx, rows, { hz, background });
  } finally {
    await f.stop();
  }
}
