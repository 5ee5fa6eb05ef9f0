// Export at exit, within a deadline. A tick lives seconds, so nothing is exported on a timer:
// spans are kept in memory and metrics are collected once at shutdown, then each signal is
// serialized by the SDK's OTLP transformer and sent in one POST (./otlp.ts) that gives up by the
// deadline, however the collector behaves.
import {
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from "@opentelemetry/otlp-transformer";
import {
  AggregationTemporality,
  InstrumentType,
  MetricReader,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace";
import { printMetrics, printSpans } from "./console.ts";
import { type OtlpTarget, redactUrl, type SignalConfig, type Temporality } from "./env.ts";
import { type PostOptions, postOtlp } from "./otlp.ts";

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

/** Milliseconds left until `deadline`, at least 1 (a 0 timeout means "none" to the SDK). */
function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

interface PartialSuccess {
  rejectedSpans?: number;
  rejectedDataPoints?: number;
  errorMessage?: string;
}

interface Serializer<T> {
  serializeRequest(items: T): Uint8Array | undefined;
  deserializeResponse(body: Uint8Array): { partialSuccess?: PartialSuccess };
}

/**
 * Serializes and posts one signal; resolves to an error message or undefined. Never rejects.
 * `what` names the signal's items for a partial success ("spans", "data points").
 */
async function exportSignal<T>(
  target: OtlpTarget,
  serializer: Serializer<T>,
  items: T,
  opts: PostOptions & { what: string },
): Promise<string | undefined> {
  try {
    const payload = serializer.serializeRequest(items);
    if (!payload) return "cannot serialize";
    const res = await postOtlp(target, payload, opts);
    return res.ok ? partialSuccess(serializer, res.body, opts.what) : res.reason;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The collector accepted the request but dropped some items (OTLP partial success); worth a warning. */
function partialSuccess<T>(serializer: Serializer<T>, body: Uint8Array, what: string): string | undefined {
  if (body.length === 0) return undefined;
  let ps: PartialSuccess | undefined;
  try {
    ps = serializer.deserializeResponse(body).partialSuccess;
  } catch {
    return undefined; // an unreadable success is still a success
  }
  const rejected = Number(ps?.rejectedSpans ?? ps?.rejectedDataPoints ?? 0);
  const message = ps?.errorMessage ?? "";
  if (!rejected && !message) return undefined;
  return `collector rejected ${rejected} ${what}${message ? `: ${message}` : ""}`;
}

/** Sends spans; resolves to an error message or undefined. Never rejects. */
export async function sendSpans(
  cfg: SignalConfig,
  spans: ReadableSpan[],
  deadline: number,
  post: Omit<PostOptions, "deadline"> = {},
): Promise<string | undefined> {
  if (spans.length === 0) return undefined;
  if (cfg.console) printSpans(spans);
  const target = cfg.otlp;
  if (!target) return undefined;
  const serializer = target.protocol === "http/json" ? JsonTraceSerializer : ProtobufTraceSerializer;
  const err = await exportSignal(target, serializer, spans, { ...post, deadline, what: "spans" });
  return err && `traces to ${redactUrl(target.url)}: ${err}`;
}

/** Sends the collected metrics; resolves to an error message or undefined. Never rejects. */
export async function sendMetrics(
  cfg: SignalConfig,
  reader: OnDemandMetricReader,
  deadline: number,
  post: Omit<PostOptions, "deadline"> = {},
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
  const serializer = target.protocol === "http/json" ? JsonMetricsSerializer : ProtobufMetricsSerializer;
  const err = await exportSignal(target, serializer, collected, { ...post, deadline, what: "data points" });
  return err && `metrics to ${redactUrl(target.url)}: ${err}`;
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
