// The OTEL_* variables as we read them: when telemetry is on at all, where each signal goes, and
// which mistakes are warned about. One table, whole outputs compared.
import { expect, test } from "bun:test";
import { type Env, readTelemetryEnv, telemetryConfigured } from "../../lib/telemetry/env.ts";

const EP = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel:4318/" };

test.each<[string, Env, boolean]>([
  ["nothing set", {}, false],
  ["only other variables", { PATH: "/usr/bin", HOME: "/root", KUBECONFIG: "/k" }, false],
  ["empty endpoint (the base CronJob's default)", { OTEL_EXPORTER_OTLP_ENDPOINT: "" }, false],
  ["an endpoint", EP, true],
  ["only a traces endpoint", { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/v1/traces" }, true],
  ["SDK disabled", { ...EP, OTEL_SDK_DISABLED: "TRUE" }, false],
  ["SDK disabled=false", { ...EP, OTEL_SDK_DISABLED: "false" }, true],
  ["both exporters none", { ...EP, OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" }, false],
  ["metrics none, traces otlp", { ...EP, OTEL_METRICS_EXPORTER: "none" }, true],
  ["console without endpoint", { OTEL_TRACES_EXPORTER: "console", OTEL_METRICS_EXPORTER: "none" }, true],
  ["console but disabled", { OTEL_TRACES_EXPORTER: "console", OTEL_SDK_DISABLED: "true" }, false],
  // Named explicitly, otlp is configured: the spec's default endpoint (a sidecar Collector).
  ["otlp named but no endpoint", { OTEL_TRACES_EXPORTER: "otlp" }, true],
  ["nothing named, no endpoint", { OTEL_SERVICE_NAME: "x" }, false],
  ["endpoint that is not a URL", { OTEL_EXPORTER_OTLP_ENDPOINT: "otel:4318" }, false],
])("telemetryConfigured: %s", (_name, env, expected) => {
  expect(telemetryConfigured(env)).toBe(expected);
});

test("endpoints, protocol, headers and timeout per signal", () => {
  const cfg = readTelemetryEnv({
    ...EP,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "https://m.example/custom",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "http/protobuf",
    OTEL_EXPORTER_OTLP_HEADERS: "a=1,b=x%3Dy",
    OTEL_EXPORTER_OTLP_METRICS_HEADERS: "a=2",
    OTEL_EXPORTER_OTLP_TIMEOUT: "3000",
  });
  expect(cfg.traces).toEqual({
    console: false,
    otlp: {
      url: "http://otel:4318/v1/traces",
      protocol: "http/json",
      headers: { a: "1", b: "x=y" },
      timeoutMs: 3000,
      compression: "none",
    },
  });
  expect(cfg.metrics.otlp).toEqual({
    url: "https://m.example/custom",
    protocol: "http/protobuf",
    headers: { a: "2", b: "x=y" },
    timeoutMs: 3000,
    compression: "none",
  });
  expect(cfg.temporality).toBe("delta");
  expect(cfg.warnings).toEqual([]);
});

test("grpc, bad timeouts, unknown exporters and bad temporality warn and fall back", () => {
  const cfg = readTelemetryEnv({
    ...EP,
    OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    OTEL_EXPORTER_OTLP_TIMEOUT: "-5",
    OTEL_TRACES_EXPORTER: "zipkin,otlp",
    OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: "sometimes",
  });
  expect(cfg.traces.otlp?.protocol).toBe("http/protobuf");
  expect(cfg.traces.otlp?.timeoutMs).toBe(10_000);
  expect(cfg.temporality).toBe("delta");
  // protocol, timeout, zipkin, temporality: each once, though both signals read the first two
  expect(cfg.warnings).toHaveLength(4);
  expect(new Set(cfg.warnings).size).toBe(4);
  expect(cfg.warnings.join("\n")).toContain("grpc is not supported; using http/protobuf");
});

test("resource attributes: percent-decoded, OTEL_SERVICE_NAME wins, header values never echoed", () => {
  const cfg = readTelemetryEnv({
    OTEL_RESOURCE_ATTRIBUTES: "service.name=a,k8s.cluster.name=prod%2Ceu,broken",
    OTEL_SERVICE_NAME: "b",
    OTEL_EXPORTER_OTLP_HEADERS: "authorization=secret-token,garbage-secret",
    ...EP,
  });
  expect(cfg.resource).toEqual({ "service.name": "b", "k8s.cluster.name": "prod,eu" });
  expect(cfg.warnings.join("\n")).not.toContain("secret");
  expect(cfg.temporality).toBe("delta");
});

test.each(["cumulative", "DELTA", "lowmemory"])("temporality preference %s is honoured", (value) => {
  expect(readTelemetryEnv({ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: value }).temporality).toBe(
    value.toLowerCase() as never,
  );
});

test("an explicit OTEL_TRACES_EXPORTER=otlp without an endpoint uses the spec default, for that signal only", () => {
  const cfg = readTelemetryEnv({ OTEL_TRACES_EXPORTER: "otlp" });
  expect(cfg.traces.otlp?.url).toBe("http://localhost:4318/v1/traces");
  // Metrics were not named: unset still means off, so a tick probes no endpoint it was not given.
  expect(cfg.metrics.otlp).toBeUndefined();
  expect(cfg.warnings).toEqual([]);
});
