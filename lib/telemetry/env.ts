// Reads the standard OTEL_* variables into one plain value. This file imports no OpenTelemetry
// package: the entry point calls `telemetryConfigured` on every start, and loading the SDK costs
// about 20 ms that a tick with telemetry off must not pay.
//
// We read the variables ourselves instead of letting the SDK read process.env because sdk-node,
// the package that normally honours OTEL_SDK_DISABLED and OTEL_*_EXPORTER, is not used (it
// drags in gRPC and Prometheus), and because an injected env keeps tests free of globals.

export type Env = Record<string, string | undefined>;
export type Protocol = "http/protobuf" | "http/json";
export type Temporality = "delta" | "cumulative" | "lowmemory";

export interface OtlpTarget {
  url: string;
  protocol: Protocol;
  headers: Record<string, string>;
  timeoutMs: number;
  compression: "gzip" | "none";
}

/** Where one signal goes; empty when the signal is off. */
export interface SignalConfig {
  otlp?: OtlpTarget;
  console: boolean;
}

export interface TelemetryEnv {
  traces: SignalConfig;
  metrics: SignalConfig;
  temporality: Temporality;
  /** OTEL_RESOURCE_ATTRIBUTES then OTEL_SERVICE_NAME, decoded; defaults are added by the caller. */
  resource: Record<string, string>;
  /** Problems worth a WARNING line; telemetry never fails a tick. */
  warnings: string[];
}

/** OTLP exporter spec default (10 s); the flush deadline bounds it further. */
const DEFAULT_TIMEOUT_MS = 10_000;

function get(env: Env, key: string): string | undefined {
  const v = env[key]?.trim();
  return v ? v : undefined;
}

/** True only when some exporter is configured and the SDK is not disabled. */
export function telemetryConfigured(env: Env): boolean {
  // The usual tick with telemetry off has no OTEL_ variable at all: nothing to read.
  if (!Object.keys(env).some((k) => k.startsWith("OTEL_"))) return false;
  const cfg = readTelemetryEnv(env);
  return signalOn(cfg.traces) || signalOn(cfg.metrics);
}

export function signalOn(s: SignalConfig): boolean {
  return s.console || s.otlp !== undefined;
}

export function readTelemetryEnv(env: Env): TelemetryEnv {
  const warnings: string[] = [];
  const off: SignalConfig = { console: false };
  const disabled = get(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true";
  return {
    traces: disabled ? off : readSignal(env, "TRACES", warnings),
    metrics: disabled ? off : readSignal(env, "METRICS", warnings),
    temporality: readTemporality(env, warnings),
    resource: readResource(env, warnings),
    // Both signals read the general OTEL_EXPORTER_OTLP_* variables: one bad value, one warning.
    warnings: [...new Set(warnings)],
  };
}

function readSignal(env: Env, signal: "TRACES" | "METRICS", warnings: string[]): SignalConfig {
  // OpenTelemetry's default exporter is otlp; left unset, without an endpoint we export nothing
  // rather than probe localhost:4318 on every tick: with no exporter configured nothing is
  // exported. Named explicitly, otlp is configured, and its endpoint takes OpenTelemetry's
  // default (a Collector as a native sidecar in the Job's pod listens there).
  const explicit = get(env, `OTEL_${signal}_EXPORTER`);
  const names = (explicit ?? "otlp").split(",").map((s) => s.trim().toLowerCase());
  const out: SignalConfig = { console: false };
  for (const name of names) {
    if (name === "console") out.console = true;
    else if (name === "otlp") out.otlp = readOtlp(env, signal, warnings, explicit !== undefined);
    else if (name !== "none" && name !== "")
      warnings.push(
        `OTEL_${signal}_EXPORTER: unsupported exporter "${name}" ignored (use otlp, console or none)`,
      );
  }
  return out;
}

/** OTLP/HTTP's default endpoint (OpenTelemetry exporter specification). */
const DEFAULT_ENDPOINT = "http://localhost:4318";

function readOtlp(
  env: Env,
  signal: "TRACES" | "METRICS",
  warnings: string[],
  named: boolean,
): OtlpTarget | undefined {
  const url = readUrl(env, signal, warnings, named ? DEFAULT_ENDPOINT : undefined);
  if (url === undefined) return undefined;
  return {
    url,
    protocol: readProtocol(env, signal, warnings),
    headers: {
      ...parseKeyValues(get(env, "OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS", warnings),
      ...parseKeyValues(
        get(env, `OTEL_EXPORTER_OTLP_${signal}_HEADERS`),
        `OTEL_EXPORTER_OTLP_${signal}_HEADERS`,
        warnings,
      ),
    },
    timeoutMs:
      readTimeout(env, `OTEL_EXPORTER_OTLP_${signal}_TIMEOUT`, warnings) ??
      readTimeout(env, "OTEL_EXPORTER_OTLP_TIMEOUT", warnings) ??
      DEFAULT_TIMEOUT_MS,
    compression:
      (get(env, `OTEL_EXPORTER_OTLP_${signal}_COMPRESSION`) ?? get(env, "OTEL_EXPORTER_OTLP_COMPRESSION")) ===
      "gzip"
        ? "gzip"
        : "none",
  };
}

function readUrl(
  env: Env,
  signal: "TRACES" | "METRICS",
  warnings: string[],
  fallback?: string,
): string | undefined {
  // A per-signal endpoint is used as given; the general one gets /v1/<signal> appended (OTLP spec).
  const specificKey = `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`;
  const specific = get(env, specificKey);
  const general = get(env, "OTEL_EXPORTER_OTLP_ENDPOINT") ?? fallback;
  const [key, url] = specific
    ? [specificKey, specific]
    : general
      ? ["OTEL_EXPORTER_OTLP_ENDPOINT", `${general.replace(/\/+$/, "")}/v1/${signal.toLowerCase()}`]
      : [undefined, undefined];
  if (key === undefined || url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "http:" || parsed.protocol === "https:") return parsed.href;
  } catch {}
  warnings.push(
    `Cannot export ${signal.toLowerCase()}: ${key} is not an http(s) URL: current value is "${redactUrl(url)}"`,
  );
  return undefined;
}

/**
 * A URL fit for a log line: user and password replaced by `***` (a collector behind basic auth
 * is sometimes written https://user:token@host); anything else with an `@` in it is not shown
 * at all (`user:token@host` parses as a URL of scheme `user:`).
 */
export function redactUrl(url: string): string {
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {}
  if (u?.protocol !== "http:" && u?.protocol !== "https:")
    return url.includes("@") ? "(not shown: it may contain credentials)" : url;
  if (!u.username && !u.password) return url;
  u.username = "***";
  u.password = "";
  return u.href;
}

function readProtocol(env: Env, signal: string, warnings: string[]): Protocol {
  const key = get(env, `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`)
    ? `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = get(env, key)?.toLowerCase();
  if (value === undefined || value === "http/protobuf") return "http/protobuf";
  if (value === "http/json") return "http/json";
  // gRPC would need @grpc/grpc-js (megabytes, and shaky under Bun); every collector also speaks HTTP.
  warnings.push(
    `${key}=${value} is not supported; using http/protobuf (point the endpoint at the collector's HTTP port, usually 4318)`,
  );
  return "http/protobuf";
}

function readTimeout(env: Env, key: string, warnings: string[]): number | undefined {
  const raw = get(env, key);
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  if (Number.isFinite(ms) && ms > 0) return ms;
  warnings.push(`${key} ignored: expected milliseconds greater than 0, current value is "${raw}"`);
  return undefined;
}

function readTemporality(env: Env, warnings: string[]): Temporality {
  const key = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE";
  const raw = get(env, key)?.toLowerCase();
  // Delta by default, unlike the OTLP spec: each tick is a new process, and cumulative points
  // that restart from zero every tick make rate() and increase() see nothing.
  if (raw === undefined) return "delta";
  if (raw === "delta" || raw === "cumulative" || raw === "lowmemory") return raw;
  warnings.push(`${key} ignored: expected delta, cumulative or lowmemory, current value is "${raw}"`);
  return "delta";
}

function readResource(env: Env, warnings: string[]): Record<string, string> {
  const attrs = parseKeyValues(get(env, "OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES", warnings);
  const service = get(env, "OTEL_SERVICE_NAME");
  if (service) attrs["service.name"] = service;
  return attrs;
}

/** `k1=v1,k2=v2` with percent-encoding (W3C Baggage style), as OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES use. */
export function parseKeyValues(
  raw: string | undefined,
  key: string,
  warnings: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (raw ?? "").split(",")) {
    if (item.trim() === "") continue;
    const eq = item.indexOf("=");
    try {
      if (eq <= 0) throw new Error("expected key=value");
      const k = decodeURIComponent(item.slice(0, eq).trim());
      if (k === "") throw new Error("empty key");
      out[k] = decodeURIComponent(item.slice(eq + 1).trim());
    } catch (err) {
      // Never echo the item: a header value may be a credential.
      warnings.push(`${key}: an entry was ignored (${(err as Error).message})`);
    }
  }
  return out;
}
