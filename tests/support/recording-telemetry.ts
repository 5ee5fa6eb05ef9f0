// A Telemetry that records spans in memory, for tests of the client (spans are part of its
// contract: names, kinds, HTTP attributes, error.type, resend counts).
import { type Attributes, noopTelemetry, type SpanKind, type Telemetry } from "../../lib/telemetry.ts";

export interface RecordedSpan {
  name: string;
  kind: SpanKind;
  attributes: Attributes;
  events: string[];
  error?: { type: string; message?: string };
  ended: boolean;
}

export function recordingTelemetry(): Telemetry & { spans: RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  return {
    ...noopTelemetry(),
    spans,
    async span(name, opts, fn) {
      const rec: RecordedSpan = {
        name,
        kind: opts.kind,
        attributes: { ...opts.attributes },
        events: [],
        ended: false,
      };
      spans.push(rec);
      try {
        return await fn({
          setAttributes: (a) => Object.assign(rec.attributes, a),
          addEvent: (n) => void rec.events.push(n),
          setError: (type, message) => {
            rec.error = { type, message };
          },
          end: () => {},
        });
      } finally {
        rec.ended = true;
      }
    },
  };
}
