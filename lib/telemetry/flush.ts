// Export at exit, within a deadline. A tick lives seconds, so nothing is exported on a timer:
// spans are kept in memory and metrics are collected once, and the exporters are built only at
// shutdown, when the remaining budget is known. That budget becomes the exporters' own timeout,
// so their retry loop (up to 5 retries, connection-refused included) gives up by the deadline
// instead of holding the process for OTEL_EXPORTER_OTLP_TIMEOUT per signal.
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import {
  AggregationTemporality,
  InstrumentType,
  MetricReader,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace";
import { printMetrics, printSpans } from "./console.ts";
import type { OtlpTarget, SignalConfig, Temporality } from "./env.ts";

/** Keeps ended spans until shutdown; a tick produces tens of spans, not thousands. */
export class BufferingSpanProcessor implements SpanProcessor {
  readonly spans: ReadableSpan[] = [];
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    if (this.spans.length < 10_000) this.spans.push(span);
  }
  forceFlush = async (): Promise<void> => {};
  shutdown = async (): Promise<void> => {};
}

/** A reader that only collects when asked: the one collection happens at shutdown. */
export class OnDemandMetricReader extends MetricReader {
  constructor(temporality: Temporality) {
    super({ aggregationTemporalitySelector: temporalitySelector(temporality) });
  }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** The OTLP exporter's own selectors, restated because our reader, not the exporter, collects. */
function temporalitySelector(t: Temporality): (type: InstrumentType) => AggregationTemporality {
  const { DELTA, CUMULATIVE } = AggregationTemporality;
  if (t === "cumulative") return () => CUMULATIVE;
  const deltaTypes: InstrumentType[] = [InstrumentType.COUNTER, InstrumentType.HISTOGRAM];
  if (t === "delta")
    deltaTypes.push(InstrumentType.OBSERVABLE_COUNTER, InstrumentType.GAUGE, InstrumentType.OBSERVABLE_GAUGE);
  return (type) => (deltaTypes.includes(type) ? DELTA : CUMULATIVE);
}

interface Exporter<T> {
  export(items: T, cb: (r: ExportResult) => void): void;
}

function exportOnce<T>(exporter: Exporter<T>, items: T): Promise<string | undefined> {
  return new Promise((resolve) => {
    try {
      exporter.export(items, (r) =>
        resolve(r.code === ExportResultCode.SUCCESS ? undefined : (r.error?.message ?? "export failed")),
      );
    } catch (err) {
      resolve((err as Error).message);
    }
  });
}

/** Milliseconds left until `deadline`; at least 1 because the exporters reject a 0 timeout. */
function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

type OtlpOptions = NonNullable<ConstructorParameters<typeof ProtoTraceExporter>[0]>;

function otlpOptions(target: OtlpTarget, timeoutMillis: number): OtlpOptions {
  return {
    url: target.url,
    headers: target.headers,
    // The SDK types this as an enum of the same two strings, from a package we do not depend on.
    compression: target.compression as OtlpOptions["compression"],
    timeoutMillis,
    // No keep-alive: the process exits right after this one request per signal.
    httpAgentOptions: { keepAlive: false },
  };
}

/** Sends spans; resolves to an error message or undefined. Never rejects. */
export async function sendSpans(
  cfg: SignalConfig,
  spans: ReadableSpan[],
  deadline: number,
): Promise<string | undefined> {
  if (spans.length === 0) return undefined;
  if (cfg.console) printSpans(spans);
  const target = cfg.otlp;
  if (!target) return undefined;
  const opts = otlpOptions(target, Math.min(target.timeoutMs, remaining(deadline)));
  const exporter =
    target.protocol === "http/json" ? new JsonTraceExporter(opts) : new ProtoTraceExporter(opts);
  const err = await exportOnce(exporter, spans);
  return err && `traces to ${target.url}: ${err}`;
}

/** Sends the collected metrics; resolves to an error message or undefined. Never rejects. */
export async function sendMetrics(
  cfg: SignalConfig,
  reader: OnDemandMetricReader,
  deadline: number,
): Promise<string | undefined> {
  let collected: ResourceMetrics;
  try {
    collected = (await reader.collect({ timeoutMillis: remaining(deadline) })).resourceMetrics;
  } catch (err) {
    return `metrics: cannot collect: ${(err as Error).message}`;
  }
  if (collected.scopeMetrics.every((s) => s.metrics.length === 0)) return undefined;
  if (cfg.console) printMetrics(collected);
  const target = cfg.otlp;
  if (!target) return undefined;
  const opts = otlpOptions(target, Math.min(target.timeoutMs, remaining(deadline)));
  const exporter =
    target.protocol === "http/json" ? new JsonMetricExporter(opts) : new ProtoMetricExporter(opts);
  const err = await exportOnce(exporter, collected);
  return err && `metrics to ${target.url}: ${err}`;
}

/**
 * Resolves with `work`'s value, or with `onTimeout` once `ms` have passed; the timer is cleared
 * either way so it cannot keep the process alive.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
