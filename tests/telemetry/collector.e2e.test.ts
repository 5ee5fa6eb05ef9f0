// Telemetry must never change what a tick does: a collector that is down, hangs or answers 500
// leaves the exit code alone and costs at most the 5 s flush budget; a disabled or unconfigured
// SDK sends nothing anywhere; the console exporter keeps stdout for command results.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Collector, type CollectorMode, rootSpan, startCollector } from "../../sim/collector.ts";
import { BINARY } from "../support/binary.ts";
import { defaultConfig, startWorld, type World } from "../support/world.ts";

/** Telemetry is flushed within 5 s in all. Slack covers process exit under parallel load. */
const FLUSH_BUDGET_MS = 5000;
const SLACK_MS = 1500;

let w: World;
let ghostConfig: string;
const collectors = {} as Record<CollectorMode, Collector>;
let downUrl: string;

beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // first observation: later ticks are no-ops
  // A store the API server refuses to read: the tick ends as `error`, exit 1.
  ghostConfig = join(w.dir, "ghost.json");
  const ghost = defaultConfig(w.registry.host);
  ghost.store = { namespace: "image-refresh", name: "ghost" };
  w.api.faults.add({
    method: "GET",
    path: "/api/v1/namespaces/image-refresh/configmaps/ghost",
    fault: { type: "status", code: 403 },
  });
  writeFileSync(ghostConfig, JSON.stringify(ghost));
  for (const mode of ["ok", "hang", "fail500"] as const) collectors[mode] = startCollector({ mode });
  const gone = startCollector();
  downUrl = gone.url;
  await gone.stop();
}, 20_000);
afterAll(async () => {
  await Promise.all([w.stop(), ...Object.values(collectors).map((c) => c.stop())]);
});

const TICKS = [
  { name: "noop", args: ["tick"], code: 0 },
  { name: "error", args: ["tick", "--config", "GHOST"], code: 1 },
];
const argsOf = (t: (typeof TICKS)[number]) => t.args.map((a) => (a === "GHOST" ? ghostConfig : a));

/**
 * Runs the binary and notes when its outcome line appears on stderr: the tick's work is done
 * there and only the telemetry flush remains, so "ends within 5 s of its work" is measurable even
 * when several runs share the CPU and each tick's own work slows down.
 */
async function timed(args: string[], env: Record<string, string> = {}) {
  const files = args.includes("--config") ? [] : ["--config", w.configPath];
  const proc = Bun.spawn([BINARY, ...args, ...files, "--kubeconfig", w.kubeconfigPath], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_EXTRA_CA_CERTS: w.caPath, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  let workDone = Number.NaN;
  const decoder = new TextDecoder();
  const readErr = (async () => {
    for await (const chunk of proc.stderr) {
      stderr += decoder.decode(chunk, { stream: true });
      if (Number.isNaN(workDone) && / outcome=/.test(stderr)) workDone = performance.now();
    }
  })();
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited, readErr]);
  return { code, stdout, stderr, flushMs: performance.now() - workDone };
}

describe("a collector that cannot take the export", () => {
  test("down, hanging or answering 500: same exit code, done within the flush budget", async () => {
    for (const t of TICKS)
      expect({ tick: t.name, code: (await w.run(argsOf(t))).code }).toEqual({ tick: t.name, code: t.code });
    const modes = [
      ["down", downUrl],
      ["hang", collectors.hang.url],
      ["fail500", collectors.fail500.url],
    ] as const;
    // All six at once: each may take the whole flush budget, one after another would take 30 s.
    const runs = await Promise.all(
      modes.flatMap(([mode, url]) =>
        TICKS.map(async (t) => ({
          mode,
          t,
          r: await timed(argsOf(t), { OTEL_EXPORTER_OTLP_ENDPOINT: url }),
        })),
      ),
    );
    for (const { mode, t, r } of runs) {
      expect({ mode, tick: t.name, code: r.code, stdout: r.stdout }).toEqual({
        mode,
        tick: t.name,
        code: t.code,
        stdout: "",
      });
      // NaN (no outcome line) fails too.
      expect({ mode, tick: t.name, flushMs: r.flushMs < FLUSH_BUDGET_MS + SLACK_MS }).toEqual({
        mode,
        tick: t.name,
        flushMs: true,
      });
      expect(r.stderr).toContain("WARNING: telemetry not exported");
    }
    // The hanging and failing collectors were really asked, so the bound was really tested.
    expect(collectors.hang.requests.length).toBeGreaterThan(0);
    expect(collectors.fail500.requests.length).toBeGreaterThan(0);
    // A hanging collector holds the process for most of the budget: what is measured is the flush.
    const hang = runs.filter((x) => x.mode === "hang").map((x) => x.r.flushMs);
    expect(Math.min(...hang)).toBeGreaterThan(FLUSH_BUDGET_MS - 1000);
  }, 30_000);

  test("an ok collector receives the tick without a warning", async () => {
    const r = await w.run([], { OTEL_EXPORTER_OTLP_ENDPOINT: collectors.ok.url });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("WARNING");
    expect(rootSpan(collectors.ok).attributes["image_refresh.outcome"]).toBe("noop");
  });
});

describe("telemetry off", () => {
  test("OTEL_SDK_DISABLED=true with an endpoint set: not one request", async () => {
    const ok = collectors.ok;
    const before = ok.requests.length;
    const r = await w.run([], {
      OTEL_SDK_DISABLED: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: ok.url,
      OTEL_TRACES_EXPORTER: "otlp",
    });
    expect(r.code).toBe(0);
    expect(ok.requests.length).toBe(before);
    expect(r.stderr).not.toContain("telemetry");
  });

  test("no endpoint and no exporter named: nothing probes the OTLP default localhost:4318", async () => {
    // The exporters' default target; a listener there catches a tick that exports without being asked.
    const seen: string[] = [];
    const probe = Bun.serve({
      hostname: "127.0.0.1",
      port: 4318,
      fetch(req) {
        seen.push(new URL(req.url).pathname);
        return new Response("{}");
      },
    });
    try {
      const r = await w.run([], {
        OTEL_SERVICE_NAME: "image-refresh",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      });
      expect(r.code).toBe(0);
      expect(r.stderr).not.toContain("telemetry");
      // The same tick with the endpoint named does reach it: the listener would have seen a probe.
      const named = await w.run([], { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" });
      expect(named.code).toBe(0);
      expect(seen.length).toBeGreaterThan(0);
      // Naming the otlp exporter explicitly is configuring it: the spec's default endpoint, as a
      // Collector sidecar in the Job's pod expects.
      seen.length = 0;
      const explicit = await w.run([], { OTEL_METRICS_EXPORTER: "otlp", OTEL_TRACES_EXPORTER: "otlp" });
      expect(explicit.code).toBe(0);
      expect(seen.sort()).toEqual(["/v1/metrics", "/v1/traces"]);
    } finally {
      await probe.stop(true);
    }
  });
});

describe("console exporter", () => {
  const parse = (stderr: string) =>
    stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { otel: string; name: string; attributes?: Record<string, unknown> });

  test("OTEL_TRACES_EXPORTER=console: spans on stderr, stdout left to the command", async () => {
    const r = await w.run([], { OTEL_TRACES_EXPORTER: "console", OTEL_METRICS_EXPORTER: "console" });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    const records = parse(r.stderr);
    const root = records.find((x) => x.otel === "span" && x.name === "image-refresh tick");
    expect(root?.attributes?.["image_refresh.outcome"]).toBe("noop");
    expect(records.some((x) => x.otel === "metric" && x.name === "image_refresh.ticks")).toBe(true);
  });

  test("status prints the same stdout with and without the console exporter", async () => {
    const plain = await w.run(["status"]);
    const traced = await w.run(["status"], { OTEL_TRACES_EXPORTER: "console" });
    expect(traced.code).toBe(plain.code);
    expect(traced.stdout).toBe(plain.stdout);
    expect(plain.stdout).toContain("api");
    expect(parse(traced.stderr).some((x) => x.otel === "span" && x.name === "GET")).toBe(true);
  });
});
