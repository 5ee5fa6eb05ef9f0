// OpenTelemetry behind lib/telemetry.ts. The entry point imports this file only when
// telemetryConfigured(env) says an exporter is configured, because loading the SDK costs about
// 20 ms, and a tick with telemetry off must start about as fast as a program that prints one line.
// Nothing here runs on a timer: a tick lives seconds, so all spans and one collection of metrics
// are exported by shutdown(), within the caller's bound.
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { defaultResource, type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { AlwaysOffSampler, AlwaysOnSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import { writeStderr } from "./lib/output.ts";
import { type Env, readTelemetryEnv, signalOn, type TelemetryEnv } from "./lib/telemetry/env.ts";
import {
  BufferingSpanProcessor,
  OnDemandMetricReader,
  sendMetrics,
  sendSpans,
  withDeadline,
} from "./lib/telemetry/flush.ts";
import { createMetrics } from "./lib/telemetry/instruments.ts";
import { createTracing } from "./lib/telemetry/tracing.ts";
import { type Attributes, noopTelemetry, type Telemetry } from "./lib/telemetry.ts";

export interface CreateTelemetryOptions {
  env: Env;
  /** The store, image-refresh's own ConfigMap: this installation's identity. */
  storeNamespace: string;
  storeName: string;
  version: string;
  /** Where configuration and export problems go; a WARNING line on stderr by default. */
  warn?: (msg: string) => void;
}

const INSTRUMENTATION_SCOPE = "image-refresh";

function stderrWarn(msg: string): void {
  writeStderr(`[image-refresh] WARNING: ${msg}\n`);
}

/** The installation, `<store namespace>/<store name>`, on the resource and on every metric point. */
function installationAttributes(opts: CreateTelemetryOptions): Attributes {
  return { "image_refresh.installation": `${opts.storeNamespace}/${opts.storeName}` };
}

function buildResource(opts: CreateTelemetryOptions, cfg: TelemetryEnv): Resource {
  // service.instance.id is stable across ticks so that every tick adds to the same series; the
  // SDK's default would be a random UUID per process, a new series every few minutes.
  const ours = {
    "service.name": "image-refresh",
    "service.version": opts.version,
    "service.instance.id": `${opts.storeNamespace}/${opts.storeName}`,
    "k8s.namespace.name": opts.storeNamespace,
    ...installationAttributes(opts),
    ...cfg.resource,
  };
  return defaultResource().merge(resourceFromAttributes(ours));
}

/** Without a registered context manager, context.active() is always ROOT and nothing parents. */
function registerContextManager(): void {
  // false when one is registered already (a second createTelemetry in tests): that one serves.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

export async function createTelemetry(opts: CreateTelemetryOptions): Promise<Telemetry> {
  const warn = opts.warn ?? stderrWarn;
  const cfg = readTelemetryEnv(opts.env);
  for (const w of cfg.warnings) warn(w);
  if (!signalOn(cfg.traces) && !signalOn(cfg.metrics)) return noopTelemetry();
  registerContextManager();
  const resource = buildResource(opts, cfg);
  const spans = new BufferingSpanProcessor();
  // With traces off, spans are still minted (ids for logs and the stored traceparent) but not
  // recorded, and their flags say so.
  const sampler = signalOn(cfg.traces) ? new AlwaysOnSampler() : new AlwaysOffSampler();
  const tracerProvider = new TracerProvider({ resource, sampler, spanProcessors: [spans] });
  const reader = new OnDemandMetricReader(cfg.temporality);
  const meterProvider = new MeterProvider({ resource, readers: signalOn(cfg.metrics) ? [reader] : [] });
  const fallback = noopTelemetry().activeIds();
  let flushed: Promise<void> | undefined;
  return {
    enabled: true,
    ...createTracing(tracerProvider.getTracer(INSTRUMENTATION_SCOPE, opts.version), fallback),
    ...createMetrics(
      meterProvider.getMeter(INSTRUMENTATION_SCOPE, opts.version),
      installationAttributes(opts),
      warn,
    ),
    shutdown(timeoutMs) {
      flushed ??= flush(cfg, spans, reader, timeoutMs, warn);
      return flushed;
    },
  };
}

/** Exports traces and metrics in parallel; never throws and returns within timeoutMs. */
async function flush(
  cfg: TelemetryEnv,
  spans: BufferingSpanProcessor,
  reader: OnDemandMetricReader,
  timeoutMs: number,
  warn: (msg: string) => void,
): Promise<void> {
  const deadline = Date.now() + Math.max(0, timeoutMs);
  try {
    const work = Promise.all([
      signalOn(cfg.traces) ? sendSpans(cfg.traces, spans.spans, deadline) : undefined,
      signalOn(cfg.metrics) ? sendMetrics(cfg.metrics, reader, deadline) : undefined,
    ]);
    const late: Array<string | undefined> = [`telemetry not exported within ${timeoutMs} ms; dropped`];
    const errors = await withDeadline(work, deadline - Date.now(), late);
    for (const e of errors) if (e) warn(e.startsWith("telemetry") ? e : `telemetry not exported: ${e}`);
  } catch (err) {
    warn(`telemetry not exported: ${(err as Error).message}`);
  }
}
