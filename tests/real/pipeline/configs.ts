// The configurations the pipeline runs with: the shipped collector config with its addresses on
// 127.0.0.1 and its durations compressed, a trace sink (a second Collector that prints what the
// first one exports), and Prometheus scraping the first with the shipped rules, compressed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { baseRules } from "../../../k8s/monitoring/generate.ts";
import { REAL, scaled, scaleRules } from "./compress.ts";

export const MONITORING = join(import.meta.dir, "..", "..", "..", "k8s", "monitoring");
export const SHIPPED_COLLECTOR = join(MONITORING, "otel-collector.yaml");
export const SHIPPED_RULES = join(MONITORING, "rules.yaml");

export interface Ports {
  otlpHttp: number;
  exporter: number;
  sinkGrpc: number;
  prometheus: number;
}

// biome-ignore lint/suspicious/noExplicitAny: a Collector config is free-form YAML
type Doc = any;

/**
 * otel-collector.yaml as shipped, but for addresses (127.0.0.1, free ports), its two durations
 * compressed, and the Collector's own metrics off (their default endpoint is port 8888, which two
 * Collectors on one machine would both want).
 */
export function collectorConfig(ports: Ports, shipped = readFileSync(SHIPPED_COLLECTOR, "utf8")): Doc {
  const c = Bun.YAML.parse(shipped) as Doc;
  c.receivers.otlp.protocols.http.endpoint = `127.0.0.1:${ports.otlpHttp}`;
  c.exporters.prometheus.endpoint = `127.0.0.1:${ports.exporter}`;
  c.exporters["otlp_grpc/traces"].endpoint = `127.0.0.1:${ports.sinkGrpc}`;
  c.exporters.prometheus.metric_expiration = scaled(c.exporters.prometheus.metric_expiration);
  c.processors.delta_to_cumulative.max_stale = scaled(c.processors.delta_to_cumulative.max_stale);
  c.service.telemetry = { metrics: { level: "none" } };
  return c;
}

/** The trace backend stand-in: OTLP/gRPC in, every span with its links printed to `file`. */
export function sinkConfig(ports: Ports, file: string): Doc {
  return {
    receivers: { otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${ports.sinkGrpc}` } } } },
    exporters: {
      debug: { verbosity: "detailed", use_internal_logger: false, output_paths: [file] },
    },
    service: {
      pipelines: { traces: { receivers: ["otlp"], exporters: ["debug"] } },
      telemetry: { metrics: { level: "none" } },
    },
  };
}

/**
 * The shipped rules rendered for k8s/base's CronJob (the one cronjob.test.ts runs) and every
 * installation (the tier runs several), with their durations compressed.
 */
export function rulesFile(shipped = baseRules()): Doc {
  return scaleRules(Bun.YAML.parse(shipped) as Doc);
}

/** A scrape target beside the Collector, e.g. kube-state-metrics. */
export interface Scrape {
  job: string;
  target: string;
}

/**
 * Prometheus' own defaults (1m scrape and evaluation), compressed; the Collector's exporter as
 * target, and `more` (kube-state-metrics as job="kube-state-metrics", as the rules expect it).
 */
export function prometheusConfig(ports: Ports, rulesPath: string, more: Scrape[] = []): Doc {
  const every = scaled(`${REAL.scrape}s`);
  return {
    global: {
      scrape_interval: every,
      scrape_timeout: every,
      evaluation_interval: scaled(`${REAL.evaluation}s`),
    },
    rule_files: [rulesPath],
    scrape_configs: [
      { job_name: "otel-collector", static_configs: [{ targets: [`127.0.0.1:${ports.exporter}`] }] },
      ...more.map((m) => ({ job_name: m.job, static_configs: [{ targets: [m.target] }] })),
    ],
  };
}

/** Prometheus' alerting section: one Alertmanager at `target` (host:port). */
export function alerting(target: string): Doc {
  return { alertmanagers: [{ static_configs: [{ targets: [target] }] }] };
}

/** Prometheus' flags for the compressed lookback (its default 5m: how long a sample stays current). */
export function prometheusFlags(ports: Ports, configPath: string, dataDir: string): string[] {
  return [
    `--config.file=${configPath}`,
    `--storage.tsdb.path=${dataDir}`,
    `--web.listen-address=127.0.0.1:${ports.prometheus}`,
    `--query.lookback-delta=${scaled(`${REAL.lookbackDelta}s`)}`,
    "--log.level=warn",
  ];
}
