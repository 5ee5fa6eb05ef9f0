// The telemetry seam. The tick, the API client and the registry client talk only to this
// interface; `exporter.ts` provides the OpenTelemetry implementation and is imported lazily,
// only when an exporter is configured, so that a tick with telemetry off pays nothing for it.

export type AttrValue = string | number | boolean;
export type Attributes = Record<string, AttrValue>;

export type SpanKind = "internal" | "client";

export interface SpanHandle {
  setAttributes(attrs: Attributes): void;
  addEvent(name: string, attrs?: Attributes): void;
  /** Marks the span as failed; `type` goes to `error.type` (a status code or an error class). */
  setError(type: string, message?: string): void;
  end(): void;
}

export interface SpanIds {
  traceId: string;
  spanId: string;
  /** W3C traceparent of this span, e.g. 00-<trace>-<span>-01. */
  traceparent: string;
}

export type MetricName =
  | "image_refresh.attempts"
  | "image_refresh.resets"
  | "image_refresh.lockouts"
  | "image_refresh.repins"
  | "image_refresh.reverts"
  | "image_refresh.regressions"
  | "image_refresh.paused"
  | "image_refresh.build_refused"
  | "image_refresh.in_sync"
  | "image_refresh.unresolved_streak"
  | "image_refresh.last_verified_timestamp"
  | "image_refresh.skips"
  | "image_refresh.ticks"
  | "image_refresh.attempt_count"
  | "image_refresh.skip_streak"
  | "image_refresh.locked_out"
  | "image_refresh.frozen"
  | "image_refresh.last_success_timestamp"
  | "image_refresh.tick.duration"
  | "image_refresh.rollout.duration";

export interface Telemetry {
  /** True when spans or metrics are exported somewhere. */
  readonly enabled: boolean;
  /**
   * Runs `fn` inside the root span `image-refresh tick`. `links` are W3C traceparents of earlier
   * ticks of the same story (from the refresh-attempt-traceparent annotation).
   */
  tick<T>(attrs: Attributes, fn: (root: SpanHandle) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` inside a root span of another command (`image-refresh rearm`, `image-refresh
   * status`), so its requests form one trace; `links` as for the tick.
   */
  command<T>(name: string, attrs: Attributes, fn: (root: SpanHandle) => Promise<T>): Promise<T>;
  /** Adds span links to the root span (the traceparent is only known after the first GET). */
  linkRoot(traceparents: readonly string[]): void;
  /** Runs `fn` inside a child span of whatever span is active. */
  span<T>(
    name: string,
    opts: { kind: SpanKind; attributes?: Attributes },
    fn: (span: SpanHandle) => Promise<T>,
  ): Promise<T>;
  /** Trace and span id of the active span, for log correlation; always present (random when not exported). */
  activeIds(): SpanIds;
  /** Traceparent of the root span, stored with the attempt count. */
  rootTraceparent(): string;
  counter(name: MetricName, value: number, attrs: Attributes): void;
  gauge(name: MetricName, value: number, attrs: Attributes): void;
  histogram(name: MetricName, value: number, attrs: Attributes): void;
  /** Exports what is buffered; never throws, never takes longer than `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

const NOOP_SPAN: SpanHandle = {
  setAttributes() {},
  addEvent() {},
  setError() {},
  end() {},
};

function randomHex(bytes: number): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const b of buf) out += b.toString(16).padStart(2, "0");
  return out;
}

/**
 * Telemetry that exports nothing. It still mints one trace and span id per tick so that JSON
 * logs and the stored traceparent correlate ticks even without a collector; the flags byte is
 * 00 (not sampled) because no span was recorded.
 */
export function noopTelemetry(): Telemetry {
  // Minted on first use: a text-logging no-op tick never asks, and skips the random source's set-up.
  let minted: SpanIds | undefined;
  const mint = (): SpanIds => {
    if (minted) return minted;
    const traceId = randomHex(16);
    const spanId = randomHex(8);
    minted = { traceId, spanId, traceparent: `00-${traceId}-${spanId}-00` };
    return minted;
  };
  return {
    enabled: false,
    tick: (_attrs, fn) => fn(NOOP_SPAN),
    command: (_name, _attrs, fn) => fn(NOOP_SPAN),
    linkRoot() {},
    span: (_name, _opts, fn) => fn(NOOP_SPAN),
    activeIds: mint,
    rootTraceparent: () => mint().traceparent,
    counter() {},
    gauge() {},
    histogram() {},
    shutdown: async () => {},
  };
}
