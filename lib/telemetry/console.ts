// OTEL_*_EXPORTER=console, for local runs. The SDK's console exporters print with console.dir to
// stdout, which carries command results (`status`, `demo`); these print one JSON object per
// span or metric to stderr, next to the log lines, and can be piped through jq.
import { hrTimeToMilliseconds } from "@opentelemetry/core";
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { writeStderr } from "../output.ts";

type Write = (line: string) => void;
const stderr: Write = (line) => writeStderr(line);

export function printSpans(spans: readonly ReadableSpan[], write: Write = stderr): void {
  for (const s of spans) {
    const ctx = s.spanContext();
    const record = {
      otel: "span",
      name: s.name,
      traceId: ctx.traceId,
      spanId: ctx.spanId,
      parentSpanId: s.parentSpanContext?.spanId,
      kind: s.kind,
      durationMs: Math.round(hrTimeToMilliseconds(s.duration) * 1000) / 1000,
      attributes: s.attributes,
      status: s.status,
      events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
      links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    };
    write(`${JSON.stringify(record)}\n`);
  }
}

export function printMetrics(rm: ResourceMetrics, write: Write = stderr): void {
  for (const scope of rm.scopeMetrics) {
    for (const m of scope.metrics) {
      const points = (m.dataPoints as ReadonlyArray<{ value: unknown; attributes: unknown }>).map((p) => ({
        value: p.value,
        attributes: p.attributes,
      }));
      write(
        `${JSON.stringify({ otel: "metric", name: m.descriptor.name, unit: m.descriptor.unit, points })}\n`,
      );
    }
  }
}
