// No-op tick sections: the product against the limit and the kubectl way (1), at scale (4), and
// with telemetry off, exporting, and exporting to a dead collector (5).
import { startCollector } from "../sim/collector.ts";
import type { Baseline } from "./baseline.ts";
import { outcomeOf, productReads, runKubectlReads, runKubectlWay, runLimit, runProduct } from "./clients.ts";
import { type Client, compare, type Measured } from "./compare.ts";
import { countedTick } from "./connections.ts";
import { fmtMs, ratio, type Spawned, span, table, timed, verdict } from "./measure.ts";
import { type BenchWorld, STORE_PATH, startBenchWorld } from "./world.ts";

export interface BenchContext {
  reps: number;
  quick: boolean;
  /** Command that runs the limit script (compiled). */
  limit: string[];
  /** Command that runs the limit script from source with Bun (for the fairness note). */
  limitSource: string[];
  /** The product at another commit (`--baseline=REF`), run beside the current binary. */
  baseline?: Baseline;
  log(line: string): void;
}

export const isNoop = (r: Spawned) => r.code === 0 && outcomeOf(r) === "noop";
export const limitOk = (r: Spawned) => r.code === 0 && r.stdout.trim() === "noop";

/** Starts a world and runs the first tick, which records the digests; every later tick is a no-op. */
export async function recordedWorld(opts: Parameters<typeof startBenchWorld>[0] = {}): Promise<BenchWorld> {
  const w = await startBenchWorld(opts);
  const first = await runProduct(w);
  if (first.code !== 0 || outcomeOf(first) !== "recorded")
    throw new Error(`Cannot prepare the bench world: first tick ended ${first.code}\n${first.stderr}`);
  await w.mirrorToState();
  return w;
}

const product = (w: BenchWorld, env: Record<string, string> = {}, name = "image-refresh tick"): Client => ({
  name,
  run: () => runProduct(w, ["tick"], env),
  ok: isNoop,
});

const first = (m: Measured) => (m.firstRequest ? fmtMs(m.firstRequest) : "–");

/** Wall time with its ratio, and CPU time with its ratio (the steadier of the two under load). */
function timing(m: Measured, base: Measured): string[] {
  return [
    fmtMs(m.ms),
    ratio(m.ms.median, base.ms.median),
    `${m.cpu.median.toFixed(0)} ms (${ratio(m.cpu.median, base.cpu.median)})`,
  ];
}
const TIMING = ["wall: median (min–max)", "wall × first row", "CPU user+sys: median (× first row)"];

function rows(ms: Measured[], base: Measured): string[][] {
  return ms.map((m) => [m.name, ...timing(m, base), first(m), span(m.api), span(m.registry)]);
}

/** kubectl's API requests by purpose: version checks, discovery, and the reads themselves. */
export function kubectlBreakdown(requests: readonly string[]): string {
  const api = requests.filter((r) => r.startsWith("API ")).map((r) => r.slice(4));
  const version = api.filter((r) => r === "GET /version").length;
  const discovery = api.filter(
    (r) => /^GET \/(api|apis)(\/[^/]+){0,2}$/.test(r) && !r.includes("/namespaces"),
  ).length;
  const reads = api.length - version - discovery;
  return `${api.length} = ${version} version checks + ${discovery} discovery + ${reads} object reads (get, list, watch)`;
}

/** kubectl processes the kubectl way starts: rollout status, 4 counter gets, a get per digest and per target workload. */
const kubectlRuns = (w: BenchWorld) => 1 + 4 + w.images.length + w.workloads.length;

/** Names the requests `a` made that `b` did not (multiset difference of their last runs). */
export function extraRequests(a: readonly string[], b: readonly string[]): string[] {
  const left = [...b];
  return a.filter((r) => {
    const i = left.indexOf(r);
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
}

function extraNote(p: Measured, l: Measured): string {
  const extra = extraRequests(p.lastRequests, l.lastRequests);
  if (!extra.length) return "";
  // The limit is handed the token realm; a client not configured with it asks the registry.
  return `; the product's extra: ${extra.map((r) => `\`${r}\``).join(", ")}${extra.some((r) => r.endsWith(" /v2/")) ? " — the challenge probe that tells it the token realm, which the limit is given" : ""}`;
}

export async function noopSection(ctx: BenchContext): Promise<string[]> {
  ctx.log("1. no-op tick: product, limit, kubectl way");
  const w = await recordedWorld();
  try {
    // The product's own reads, as one no-op tick of it made them, for the kubectl-reads row.
    w.clearLogs();
    if (!isNoop(await runProduct(w)))
      throw new Error("Cannot prepare the bench world: a tick was not a no-op");
    const reads = productReads(w);
    const ms = await compare(
      w,
      [
        product(w),
        {
          name: "image-refresh tick, `registry.token` set",
          run: () => runProduct(w, ["tick"], {}, [], w.tokenConfigPath),
          ok: isNoop,
        },
        { name: "limit (compiled)", run: () => runLimit(w, ctx.limit), ok: limitOk },
        {
          name: "limit (compiled), the registry once the store answered (the tick's order)",
          run: () => runLimit(w, ctx.limit, { LIMIT_ORDER: "store-first" }),
          ok: limitOk,
        },
        {
          name: "limit (compiled), the API server trusted through NODE_EXTRA_CA_CERTS (as it did before)",
          run: () => runLimit(w, ctx.limit, { LIMIT_API_TRUST: "process" }),
          ok: limitOk,
        },
        { name: "limit (`bun limit.ts`)", run: () => runLimit(w, ctx.limitSource), ok: limitOk },
        {
          name: "kubectl way (bash, kubectl, curl)",
          run: () => runKubectlWay(w),
          ok: limitOk,
          reps: ctx.quick ? 3 : 7,
        },
        {
          name: "kubectl way, the product's reads (a kubectl per API read, a curl per registry request)",
          run: () => runKubectlReads(w, reads),
          ok: limitOk,
          reps: ctx.quick ? 3 : 7,
        },
        ...baselineTick(ctx, w),
      ],
      ctx.reps,
    );
    const [p, t, l, lo, ls, , k, kr] = ms as Measured[] as [
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
    ];
    const readCount = reads.split("\n");
    // While the tick keeps its bookkeeping on the state workload, the limit's store GET reads
    // that workload, which the tick reads once as a target: one API GET more, by construction.
    const standIn = w.storePath === STORE_PATH ? 0 : 1;
    const same = (m: Measured) =>
      m.api.every((n) => n + standIn === l.api[0]) && m.registry.every((n) => n === l.registry[0]);
    return [
      "### 1. No-op tick (3 images, 4 targets, healthy, unchanged)",
      "",
      ...table(
        ["client", ...TIMING, "spawn → first request", "API requests", "registry requests"],
        rows(ms, p),
      ),
      "",
      `- Same requests as the limit: ${verdict(same(t))} with \`registry.token\` set (${span(t.api)} API + ${span(t.registry)} registry, limit ${span(l.api)} + ${span(l.registry)}${extraNote(t, l)}); without it ${same(p) ? "also the same" : `${span(p.api)} + ${span(p.registry)}${extraNote(p, l)}`}.`,
      ...(standIn
        ? [
            "- This binary keeps its bookkeeping on the state workload: the limit's store GET reads that workload instead (one GET of one object, as the store's), so it makes one API request more than this tick.",
          ]
        : []),
      `- CPU at most 10 ms above the limit's (the budget): ${verdict(p.cpu.median - l.cpu.median <= 10)} (+${(p.cpu.median - l.cpu.median).toFixed(1)} ms; with \`registry.token\` +${(t.cpu.median - l.cpu.median).toFixed(1)} ms).`,
      // On 127.0.0.1 the wall ratio measures Bun's start-up against the loopback and moves with
      // the machine: a figure, not a budget (the budget is the registry 20–50 ms away, section 7).
      `- Wall and CPU against the limit (a figure, not a budget): wall ${ratio(p.ms.median, l.ms.median)}, CPU ${ratio(p.cpu.median, l.cpu.median)}; with \`registry.token\` wall ${ratio(t.ms.median, l.ms.median)}, CPU ${ratio(t.cpu.median, l.cpu.median)}. Against the limit in the tick's order (the registry once the store answered): wall ${ratio(p.ms.median, lo.ms.median)} (the order costs the script ${(lo.ms.median - l.ms.median).toFixed(1)} ms). Against the limit trusting the API server through NODE_EXTRA_CA_CERTS, as it did before, instead of through the kubeconfig's CA as the product and every client do: wall ${ratio(p.ms.median, ls.ms.median)} (the CA of its own costs the script ${(l.ms.median - ls.ms.median).toFixed(1)} ms).`,
      `- The kubectl way's API requests: ${kubectlBreakdown(k.lastRequests)} (this kubectl checks /version on each of its ${kubectlRuns(w)} invocations — rollout status, 4 counters, ${w.images.length} digests, ${w.workloads.length} target workloads — and discovers the API groups once per empty cache).`,
      `- At most a fifteenth of the kubectl way's time (the budget): ${verdict(k.ms.median >= 15 * p.ms.median)} (wall ${ratio(k.ms.median, p.ms.median)}, CPU ${ratio(k.cpu.median, p.cpu.median)}).`,
      `- The product's reads the kubectl way: ${readCount.filter((r) => r.startsWith("kubectl ")).length} kubectl and ${readCount.filter((r) => r.startsWith("curl ")).length} curl processes, one after the other (${kubectlBreakdown(kr.lastRequests)}); at most a fifteenth of its time: ${verdict(kr.ms.median >= 15 * p.ms.median)} (wall ${ratio(kr.ms.median, p.ms.median)}, CPU ${ratio(kr.cpu.median, p.cpu.median)}).`,
      "",
    ];
  } finally {
    await w.stop();
  }
}

/** The no-op tick of the baseline binary, when there is one; last, so the rows above keep their order. */
function baselineTick(ctx: BenchContext, w: BenchWorld): Client[] {
  const b = ctx.baseline;
  if (!b) return [];
  const files = ["--config", w.configPath, "--kubeconfig", w.kubeconfigPath];
  return [
    {
      name: `image-refresh tick at ${b.ref} (baseline)`,
      run: () => timed([...b.command, "tick", ...files], w.env()),
      ok: isNoop,
    },
  ];
}

/** The scale grid: workloads × images (images = min(workloads, the column's cap)). */
const SCALE_GRID: ReadonlyArray<{ targets: number; maxRepos: number }> = [
  { targets: 1, maxRepos: 1 },
  { targets: 10, maxRepos: 10 },
  { targets: 50, maxRepos: 50 },
  { targets: 200, maxRepos: 50 },
  { targets: 200, maxRepos: 200 },
  { targets: 500, maxRepos: 200 },
  { targets: 1000, maxRepos: 200 },
];

export async function scaleSection(ctx: BenchContext): Promise<string[]> {
  ctx.log("4. scale");
  const out: string[][] = [];
  let cpuAt500 = Number.NaN;
  let worstApi = 0;
  let worstRegistry = 0;
  let rssAt500 = Number.NaN;
  const kubectlTimes: number[] = [];
  for (const shape of SCALE_GRID) {
    ctx.log(`   ${shape.targets} targets, up to ${shape.maxRepos} images`);
    const w = await recordedWorld({ scale: shape });
    try {
      const reps = shape.targets >= 500 ? Math.max(3, Math.ceil(ctx.reps / 3)) : ctx.reps;
      // The kubectl way at 1 to 200 workloads: one kubectl per read makes 200 over 200 images minutes long.
      const kubectl: Client[] =
        shape.targets <= 200 && shape.maxRepos <= 50
          ? [{ name: "kubectl way", run: () => runKubectlWay(w), ok: limitOk, reps: ctx.quick ? 2 : 3 }]
          : [];
      const [p, l, k] = (await compare(
        w,
        [product(w), { name: "limit", run: () => runLimit(w, ctx.limit), ok: limitOk }, ...kubectl],
        reps,
      )) as [Measured, Measured, Measured | undefined];
      const n = await countedTick(w);
      if (k) kubectlTimes.push(k.ms.median / p.ms.median);
      out.push([
        String(shape.targets),
        String(w.images.length),
        fmtMs(p.ms),
        fmtMs(l.ms),
        ratio(p.ms.median, l.ms.median),
        `${p.cpu.median.toFixed(0)} / ${l.cpu.median.toFixed(0)} ms (${ratio(p.cpu.median, l.cpu.median)})`,
        `${span(p.api)} + ${span(p.registry)}`,
        `${span(l.api)} + ${span(l.registry)}`,
        `${n.api} + ${n.registry}`,
        Number.isNaN(n.rssMb) ? "–" : `${n.rssMb.toFixed(1)} MB`,
        k ? `${fmtMs(k.ms)} (${ratio(k.ms.median, p.ms.median)})` : "–",
      ]);
      worstApi = Math.max(worstApi, n.api);
      worstRegistry = Math.max(worstRegistry, n.registry);
      if (shape.targets === 500) {
        cpuAt500 = p.cpu.median / l.cpu.median;
        rssAt500 = n.rssMb;
      }
    } finally {
      await w.stop();
    }
  }
  return [
    "### 4. Scale: no-op tick, workloads spread round-robin over the images",
    "",
    ...table(
      [
        "workloads",
        "images",
        "product wall",
        "limit wall",
        "wall × limit",
        "CPU product / limit",
        "product requests (API + registry)",
        "limit requests",
        "product connections (API + registry)",
        "product peak RSS",
        "kubectl way (× product)",
      ],
      out,
    ),
    "",
    `- At most 8 connections to the API server and 8 to the registry: ${verdict(worstApi <= 8 && worstRegistry <= 8)} (most ${worstApi} + ${worstRegistry}; counted by TCP relays in a run of its own).`,
    `- At least 15× faster than the kubectl way at every size from 1 to 200 workloads: ${verdict(kubectlTimes.length > 0 && kubectlTimes.every((x) => x >= 15))} (${kubectlTimes.map((x) => `${x.toFixed(1)}×`).join(", ")}).`,
    `- CPU at 200 images / 500 workloads within 1.3× the limit: ${verdict(cpuAt500 <= 1.3)} (${cpuAt500.toFixed(2)}×).`,
    `- Peak RSS of the no-op tick at 500 workloads: ${Number.isNaN(rssAt500) ? "not measured (no GNU time)" : `${rssAt500.toFixed(1)} MB`}; a refresh at 500 workloads is measured in section 2.`,
    "",
  ];
}

const pct = (a: number, b: number) => `${((a / b - 1) * 100).toFixed(0)} %`;

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<string> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const url = `http://127.0.0.1:${s.port}`;
  await s.stop(true);
  return url;
}

export async function telemetrySection(ctx: BenchContext): Promise<string[]> {
  ctx.log("5. telemetry overhead");
  const w = await recordedWorld();
  const collector = startCollector();
  const otlp = (endpoint: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
  });
  try {
    const dead = await closedPort();
    const ms = await compare(
      w,
      [
        product(w, {}, "export off"),
        product(w, otlp(collector.url), "export to a live collector (http/protobuf)"),
        { ...product(w, otlp(dead), "collector down (closed port)"), reps: ctx.quick ? 2 : 4 },
      ],
      ctx.reps,
    );
    const [off, live, down] = ms as [Measured, Measured, Measured];
    const spans = collector.spans.length;
    return [
      "### 5. Telemetry overhead (no-op tick)",
      "",
      ...table(
        ["telemetry", ...TIMING],
        ms.map((m) => [m.name, ...timing(m, off)]),
      ),
      "",
      `- The live collector received ${spans} spans over ${live.ms.n} ticks (${(spans / live.ms.n).toFixed(1)} per tick).`,
      `- Export ≤ +20 %: ${verdict(live.ms.median <= 1.2 * off.ms.median)} (wall +${pct(live.ms.median, off.ms.median)}, +${(live.ms.median - off.ms.median).toFixed(1)} ms; CPU +${pct(live.cpu.median, off.cpu.median)}).`,
      `- Dead collector ≤ 5 s: ${verdict(down.ms.max <= 5000 + off.ms.max)} (worst ${down.ms.max.toFixed(0)} ms).`,
      "",
    ];
  } finally {
    await Promise.all([w.stop(), collector.stop()]);
  }
}
