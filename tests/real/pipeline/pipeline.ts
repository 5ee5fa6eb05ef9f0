// Starts the real pipeline on 127.0.0.1: the Collector with the shipped config, a second Collector
// as trace sink, Prometheus scraping the first with the shipped rules. Each process runs under
// `timeout`, so it ends by itself even if the test process dies; stop() ends them at once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { scaled } from "./compress.ts";
import {
  alerting,
  collectorConfig,
  type Ports,
  prometheusConfig,
  prometheusFlags,
  rulesFile,
  type Scrape,
  sinkConfig,
} from "./configs.ts";
import type { Peers } from "./peers.ts";

/** No process of the pipeline outlives this, whatever happens to the test. */
const LIFETIME_S = 900;

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
}

export interface Pipeline {
  ports: Ports;
  dir: string;
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the product. */
  otlpUrl: string;
  /** What the trace sink printed so far (the debug exporter's detailed text). */
  sinkOutput(): string;
  query(
    expr: string,
    time?: number,
  ): Promise<Array<{ metric: Record<string, string>; value?: unknown; values?: unknown[] }>>;
  alerts(): Promise<Alert[]>;
  /** The exporter's exposition as Prometheus scrapes it. */
  scrape(): Promise<string>;
  stopCollector(): Promise<void>;
  startCollector(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/**
 * Runs `bin` under `timeout` and a watch on this process: it ends with SIGTERM (the watch passes
 * it on), when this test process is gone, or after LIFETIME_S, whichever comes first.
 */
export function spawn(bin: string, args: string[], log: string): Subprocess {
  const watch = `"$@" & c=$!; trap 'kill $c 2>/dev/null' TERM; while kill -0 ${process.pid} 2>/dev/null && kill -0 $c 2>/dev/null; do sleep 0.5; done; kill $c 2>/dev/null; wait $c`;
  return Bun.spawn(["sh", "-c", watch, "sh", "timeout", "-s", "KILL", String(LIFETIME_S), bin, ...args], {
    stdout: Bun.file(`${log}.out`),
    stderr: Bun.file(`${log}.err`),
    stdin: "ignore",
  });
}

export async function until(
  what: string,
  ok: () => Promise<boolean>,
  proc: Subprocess,
  log: string,
  ms = 30_000,
) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) break;
    if (await ok().catch(() => false)) return;
    await Bun.sleep(100);
  }
  const err = readFileSync(`${log}.err`, "utf8").slice(-3000);
  throw new Error(`Cannot start ${what} (exit ${proc.exitCode}):\n${err}`);
}

const get = (url: string) => fetch(url).then((r) => r.ok);
const tcp = (port: number) =>
  new Promise<boolean>((resolve) => {
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (s) => {
          s.end();
          resolve(true);
        },
        error: () => resolve(false),
        data() {},
      },
    }).catch(() => resolve(false));
  });

export interface PipelineOptions {
  /** Rules text to load instead of rules.yaml rendered for k8s/base (e.g. one installation's). */
  rules?: string;
  /** host:port of an Alertmanager Prometheus sends its alerts to. */
  alertmanager?: string;
  /** host:port of an OTLP/gRPC trace backend (Jaeger) the Collector sends traces to instead of the sink. */
  traces?: string;
}

export async function startPipeline(
  peers: Peers,
  more: Scrape[] = [],
  opts: PipelineOptions = {},
): Promise<Pipeline> {
  const ports: Ports = {
    otlpHttp: await freePort(),
    exporter: await freePort(),
    sinkGrpc: await freePort(),
    prometheus: await freePort(),
  };
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-pipeline-"));
  const path = (name: string) => join(dir, name);
  const shipped = collectorConfig(ports);
  if (opts.traces) shipped.exporters["otlp_grpc/traces"].endpoint = opts.traces;
  writeFileSync(path("collector.json"), JSON.stringify(shipped, null, 2));
  writeFileSync(path("sink.json"), JSON.stringify(sinkConfig(ports, path("sink.txt")), null, 2));
  writeFileSync(path("sink.txt"), "");
  writeFileSync(path("rules.json"), JSON.stringify(rulesFile(opts.rules), null, 2));
  const prometheus = prometheusConfig(ports, path("rules.json"), more);
  if (opts.alertmanager) prometheus.alerting = alerting(opts.alertmanager);
  writeFileSync(path("prometheus.json"), JSON.stringify(prometheus, null, 2));
  const base = `http://127.0.0.1:${ports.prometheus}`;
  const procs: Subprocess[] = [];

  const sink = spawn(peers.otelcol, ["--config", path("sink.json")], path("sink"));
  procs.push(sink);
  await until("the trace sink", () => tcp(ports.sinkGrpc), sink, path("sink"));
  let collector: Subprocess | undefined;
  const startCollector = async () => {
    collector = spawn(peers.otelcol, ["--config", path("collector.json")], path("collector"));
    await until(
      "the Collector",
      () => get(`http://127.0.0.1:${ports.exporter}/metrics`),
      collector,
      path("collector"),
    );
  };
  await startCollector();
  const flags = prometheusFlags(ports, path("prometheus.json"), path("tsdb"));
  // Prometheus resends a firing alert every minute by default: compressed like the rest.
  if (opts.alertmanager) flags.push(`--rules.alert.resend-delay=${scaled("1m")}`);
  const prom = spawn(peers.prometheus, flags, path("prometheus"));
  procs.push(prom);
  await until("Prometheus", () => get(`${base}/-/ready`), prom, path("prometheus"));
  // Prometheus hands discovered targets to its scrapers at most every 5 s: wait for the first scrape.
  const api = async <T>(p: string): Promise<T> => {
    const r = await fetch(`${base}${p}`);
    const body = (await r.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success") throw new Error(`Prometheus ${p}: ${body.error ?? r.status}`);
    return body.data;
  };
  type Vector = { result: Array<{ metric: Record<string, string>; value?: [number, string] }> };
  const up = (job: string) => () =>
    api<Vector>(`/api/v1/query?query=${encodeURIComponent(`up{job="${job}"}`)}`).then(
      (d) => d.result[0]?.value?.[1] === "1",
    );
  for (const job of ["otel-collector", ...more.map((m) => m.job)])
    await until(`Prometheus' first scrape of ${job}`, up(job), prom, path("prometheus"));

  return {
    ports,
    dir,
    otlpUrl: `http://127.0.0.1:${ports.otlpHttp}`,
    sinkOutput: () => readFileSync(path("sink.txt"), "utf8"),
    query: async (expr, time) =>
      (await api<Vector>(`/api/v1/query?query=${encodeURIComponent(expr)}${time ? `&time=${time}` : ""}`))
        .result,
    alerts: async () => (await api<{ alerts: Alert[] }>("/api/v1/alerts")).alerts,
    scrape: () => fetch(`http://127.0.0.1:${ports.exporter}/metrics`).then((r) => r.text()),
    async stopCollector() {
      collector?.kill("SIGTERM");
      await collector?.exited;
      collector = undefined;
    },
    startCollector,
    async stop() {
      for (const p of [...procs, collector]) p?.kill("SIGTERM");
      await Promise.all([...procs, collector].map((p) => p?.exited));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
