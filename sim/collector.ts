// A simulated OTLP/HTTP collector for tests, bench and demo: POST /v1/traces and /v1/metrics in
// OTLP/JSON or protobuf, normalized into plain spans and metric points. Modes reproduce the
// collectors that must never hold a tick up: one answering 500, one that never answers, and
// one that is gone (stop()).
import { decodeMetrics, decodeTraces } from "./collector-proto.ts";

export type CollectorMode = "ok" | "fail500" | "hang";
type Json = Record<string, unknown>;

export interface CollectedSpan {
  name: string;
  traceId: string;
  spanId: string;
  /** Empty string for a root span. */
  parentSpanId: string;
  kind: "unspecified" | "internal" | "server" | "client" | "producer" | "consumer";
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code: "unset" | "ok" | "error"; message: string };
  resource: Record<string, unknown>;
}

export interface CollectedPoint {
  /** The number for sums and gauges; the sum of observations for histograms. */
  value: number;
  attributes: Record<string, unknown>;
  count?: number;
  bucketCounts?: number[];
}

export interface CollectedMetric {
  name: string;
  unit: string;
  type: "sum" | "gauge" | "histogram";
  temporality: "delta" | "cumulative" | undefined;
  monotonic?: boolean;
  points: CollectedPoint[];
  resource: Record<string, unknown>;
}

export interface CollectedRequest {
  path: string;
  contentType: string;
  headers: Record<string, string>;
}

export interface Collector {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://127.0.0.1:4318 */
  url: string;
  spans: CollectedSpan[];
  metrics: CollectedMetric[];
  /** Every request that reached the collector, in order, whatever the mode. */
  requests: CollectedRequest[];
  setMode(mode: CollectorMode): void;
  stop(): Promise<void>;
}

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;
const STATUS = ["unset", "ok", "error"] as const;

function anyValue(v: Json | undefined): unknown {
  if (!v) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return ((v.arrayValue as Json).values as Json[] | undefined)?.map(anyValue) ?? [];
  if ("kvlistValue" in v) return attrs((v.kvlistValue as Json).values as Json[]);
  return undefined;
}

function attrs(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key as string, anyValue(kv.value as Json)]));
}

const arr = (v: unknown) => (Array.isArray(v) ? (v as Json[]) : []);

export function normalizeTraces(body: Json): CollectedSpan[] {
  return arr(body.resourceSpans).flatMap((rs) => {
    const resource = attrs(arr((rs.resource as Json | undefined)?.attributes));
    return arr(rs.scopeSpans).flatMap((ss) =>
      arr(ss.spans).map((s) => ({
        name: String(s.name),
        traceId: String(s.traceId ?? ""),
        spanId: String(s.spanId ?? ""),
        parentSpanId: String(s.parentSpanId ?? ""),
        kind: KINDS[Number(s.kind ?? 0)] ?? "unspecified",
        attributes: attrs(arr(s.attributes)),
        events: arr(s.events).map((e) => ({ name: String(e.name), attributes: attrs(arr(e.attributes)) })),
        links: arr(s.links).map((l) => ({ traceId: String(l.traceId), spanId: String(l.spanId) })),
        status: {
          code: STATUS[Number((s.status as Json | undefined)?.code ?? 0)] ?? "unset",
          message: String((s.status as Json | undefined)?.message ?? ""),
        },
        resource,
      })),
    );
  });
}

function point(p: Json, histogram: boolean): CollectedPoint {
  const attributes = attrs(arr(p.attributes));
  if (histogram)
    return {
      value: Number(p.sum ?? 0),
      count: Number(p.count),
      bucketCounts: arr(p.bucketCounts).map(Number),
      attributes,
    };
  return { value: Number(p.asInt ?? p.asDouble ?? 0), attributes };
}

function metric(m: Json, resource: Record<string, unknown>): CollectedMetric {
  const type = m.histogram ? "histogram" : m.sum ? "sum" : "gauge";
  const data = (m[type] ?? {}) as Json;
  const t = Number(data.aggregationTemporality ?? 0);
  return {
    name: String(m.name),
    unit: String(m.unit ?? ""),
    type,
    temporality: t === 1 ? "delta" : t === 2 ? "cumulative" : undefined,
    ...(type === "sum" ? { monotonic: Boolean(data.isMonotonic) } : {}),
    points: arr(data.dataPoints).map((p) => point(p, type === "histogram")),
    resource,
  };
}

export function normalizeMetrics(body: Json): CollectedMetric[] {
  return arr(body.resourceMetrics).flatMap((rm) => {
    const resource = attrs(arr((rm.resource as Json | undefined)?.attributes));
    return arr(rm.scopeMetrics).flatMap((sm) => arr(sm.metrics).map((m) => metric(m, resource)));
  });
}

/** An OTLP/HTTP request body as JSON, whichever encoding and compression it came in. */
export function decodeOtlpBody(
  signal: "traces" | "metrics",
  headers: { contentType: string; contentEncoding?: string | null },
  bytes: Uint8Array,
): Json {
  const raw = headers.contentEncoding === "gzip" ? Bun.gunzipSync(bytes as Uint8Array<ArrayBuffer>) : bytes;
  const type = headers.contentType;
  if (type.startsWith("application/json")) return JSON.parse(new TextDecoder().decode(raw)) as Json;
  if (!type.startsWith("application/x-protobuf")) throw new Error(`unsupported content-type ${type}`);
  return signal === "traces" ? decodeTraces(raw) : decodeMetrics(raw);
}

async function parseBody(req: Request, signal: "traces" | "metrics"): Promise<Json> {
  return decodeOtlpBody(
    signal,
    {
      contentType: req.headers.get("content-type") ?? "",
      contentEncoding: req.headers.get("content-encoding"),
    },
    new Uint8Array(await req.arrayBuffer()),
  );
}

/** Starts a collector on 127.0.0.1 with a free port. */
export function startCollector(opts: { mode?: CollectorMode } = {}): Collector {
  let mode: CollectorMode = opts.mode ?? "ok";
  const spans: CollectedSpan[] = [];
  const metrics: CollectedMetric[] = [];
  const requests: CollectedRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A hanging collector must hang longer than any flush budget; Bun's default idle timeout is 10 s.
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      requests.push({
        path,
        contentType: req.headers.get("content-type") ?? "",
        headers: Object.fromEntries(req.headers),
      });
      if (mode === "hang") return new Promise<Response>(() => {});
      if (mode === "fail500") return new Response("simulated failure", { status: 500 });
      const signal = path === "/v1/traces" ? "traces" : path === "/v1/metrics" ? "metrics" : undefined;
      if (req.method !== "POST" || !signal) return new Response("not found", { status: 404 });
      try {
        const body = await parseBody(req, signal);
        if (signal === "traces") spans.push(...normalizeTraces(body));
        else metrics.push(...normalizeMetrics(body));
      } catch (err) {
        return new Response(String((err as Error).message), { status: 400 });
      }
      // An empty ExportServiceResponse is valid in both encodings.
      return new Response(req.headers.get("content-type")?.includes("json") ? "{}" : new Uint8Array(), {
        status: 200,
      });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    metrics,
    requests,
    setMode(m) {
      mode = m;
    },
    async stop() {
      await server.stop(true);
    },
  };
}

// Helpers for tests that read what a tick exported (shared with the end-to-end suites).

/** The root span `image-refresh tick` of each trace received, in arrival order. */
export function rootSpans(c: Pick<Collector, "spans">): CollectedSpan[] {
  return c.spans.filter((s) => s.name === "image-refresh tick" && s.parentSpanId === "");
}

/** The single root span; throws naming what arrived when there is not exactly one. */
export function rootSpan(c: Pick<Collector, "spans">): CollectedSpan {
  const roots = rootSpans(c);
  if (roots.length !== 1)
    throw new Error(`Expected one root span, got ${roots.length}: ${c.spans.map((s) => s.name)}`);
  return roots[0] as CollectedSpan;
}

export function childrenOf(c: Pick<Collector, "spans">, parent: CollectedSpan): CollectedSpan[] {
  return c.spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
}

function matches(point: CollectedPoint, where: Record<string, unknown>): boolean {
  return Object.entries(where).every(([k, v]) => point.attributes[k] === v);
}

/** Points of one metric across every export received, optionally filtered by attributes. */
export function points(
  c: Pick<Collector, "metrics">,
  name: string,
  where: Record<string, unknown> = {},
): CollectedPoint[] {
  return c.metrics.filter((m) => m.name === name).flatMap((m) => m.points.filter((p) => matches(p, where)));
}

/** Sum of a counter's delta points (or of histogram sums); meaningless for cumulative exports. */
export function sumOf(
  c: Pick<Collector, "metrics">,
  name: string,
  where: Record<string, unknown> = {},
): number {
  return points(c, name, where).reduce((acc, p) => acc + p.value, 0);
}

/** The last value received for a gauge, or undefined when it never arrived. */
export function lastGauge(
  c: Pick<Collector, "metrics">,
  name: string,
  where: Record<string, unknown> = {},
): number | undefined {
  return points(c, name, where).at(-1)?.value;
}
