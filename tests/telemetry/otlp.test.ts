// The OTLP/HTTP sender against real sockets: a test collector that decodes what it receives the
// way the simulated collector does, and answers from a script (503 then 200, Retry-After, hang).
import { afterEach, describe, expect, test } from "bun:test";
import { createTelemetry } from "../../exporter.ts";
import type { OtlpTarget } from "../../lib/telemetry/env.ts";
import { postOtlp } from "../../lib/telemetry/otlp.ts";
import { decodeOtlpBody, normalizeMetrics, normalizeTraces } from "../../sim/collector.ts";

interface Received {
  path: string;
  headers: Record<string, string>;
  /** The decoded request (gunzipped when it says gzip), or the decoding error. */
  decoded: Record<string, unknown> | string;
  at: number;
}

type Answer = Response | "hang";

/** A collector answering from `script` in order (the last answer repeats); 200 when empty. */
function scripted(script: Array<() => Answer> = []) {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const raw = new Uint8Array(await req.arrayBuffer());
      let decoded: Received["decoded"];
      try {
        decoded = decodeOtlpBody(
          path.endsWith("/metrics") ? "metrics" : "traces",
          {
            contentType: req.headers.get("content-type") ?? "",
            contentEncoding: req.headers.get("content-encoding"),
          },
          raw,
        );
      } catch (err) {
        decoded = (err as Error).message;
      }
      received.push({ path, headers: Object.fromEntries(req.headers), decoded, at: performance.now() });
      const next = script[Math.min(received.length - 1, script.length - 1)];
      const answer = next ? next() : new Response(new Uint8Array());
      return answer === "hang" ? new Promise<Response>(() => {}) : answer;
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, received };
}

const servers: Array<ReturnType<typeof Bun.serve>> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

// A port that was just listening and is closed now: connections to it are refused.
const deadPort = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
const deadUrl = `http://127.0.0.1:${deadPort.port}`;
await deadPort.stop(true);

const STATE = {
  storeNamespace: "apps",
  storeName: "api",
  version: "1.2.3",
} as const;

/** One tick's worth of telemetry through createTelemetry, flushed with `budgetMs`. */
async function tickAndFlush(env: Record<string, string>, budgetMs = 5000) {
  const warnings: string[] = [];
  const t = await createTelemetry({ ...STATE, env, warn: (m) => warnings.push(m) });
  await t.tick({ "image_refresh.outcome": "noop" }, () => t.span("GET", { kind: "client" }, async () => {}));
  t.counter("image_refresh.ticks", 1, { "image_refresh.outcome": "noop" });
  const started = performance.now();
  await t.shutdown(budgetMs);
  return { warnings, tookMs: performance.now() - started };
}

describe("createTelemetry with the OTLP/HTTP sender", () => {
  test("a dead collector (connection refused) costs well under a second, with one warning per signal", async () => {
    const { warnings, tookMs } = await tickAndFlush({ OTEL_EXPORTER_OTLP_ENDPOINT: deadUrl });
    expect(tookMs).toBeLessThan(1000);
    expect(warnings.sort()).toEqual([
      expect.stringMatching(new RegExp(`^telemetry not exported: metrics to ${deadUrl}/v1/metrics: .+`)),
      expect.stringMatching(new RegExp(`^telemetry not exported: traces to ${deadUrl}/v1/traces: .+`)),
    ]);
  });

  test.each(["http/protobuf", "http/json"])(
    "%s with gzip and headers: the collector decodes both signals",
    async (protocol) => {
      const c = scripted();
      const { warnings } = await tickAndFlush({
        OTEL_EXPORTER_OTLP_ENDPOINT: c.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20t0ken,x-tenant=blue",
      });
      expect(warnings).toEqual([]);
      const byPath = Object.fromEntries(c.received.map((r) => [r.path, r]));
      expect(Object.keys(byPath).sort()).toEqual(["/v1/metrics", "/v1/traces"]);
      const type = protocol === "http/json" ? "application/json" : "application/x-protobuf";
      for (const r of c.received) {
        expect(r.headers).toMatchObject({
          "content-type": type,
          "content-encoding": "gzip",
          authorization: "Bearer t0ken",
          "x-tenant": "blue",
        });
      }
      const spans = normalizeTraces(byPath["/v1/traces"]?.decoded as Record<string, unknown>);
      expect(spans.map((s) => s.name).sort()).toEqual(["GET", "image-refresh tick"]);
      expect(spans[0]?.resource["service.instance.id"]).toBe("apps/api");
      const metrics = normalizeMetrics(byPath["/v1/metrics"]?.decoded as Record<string, unknown>);
      expect(metrics.map((m) => [m.name, m.temporality, m.points[0]?.value])).toEqual([
        ["image_refresh.ticks", "delta", 1],
      ]);
    },
  );
});

const PAYLOAD = new TextEncoder().encode('{"resourceSpans":[]}');

function target(url: string, over: Partial<OtlpTarget> = {}): OtlpTarget {
  return {
    url: `${url}/v1/traces`,
    protocol: "http/json",
    headers: {},
    timeoutMs: 10_000,
    compression: "none",
    ...over,
  };
}

/** postOtlp with a real clock and sleep; returns the result and how long it took. */
async function post(t: OtlpTarget, budgetMs: number) {
  const started = performance.now();
  const result = await postOtlp(t, PAYLOAD, { deadline: Date.now() + budgetMs });
  return { result, tookMs: performance.now() - started };
}

const status =
  (code: number, headers: Record<string, string> = {}, body = "") =>
  () =>
    new Response(body, { status: code, headers });

describe("postOtlp", () => {
  test("503 then 200: retried, succeeds, with a backoff between the attempts", async () => {
    const c = scripted([status(503), status(503), status(200)]);
    const { result } = await post(target(c.url), 5000);
    expect(result).toEqual({ ok: true, body: new Uint8Array() });
    expect(c.received.length).toBe(3);
    const [a, b] = [c.received[1]?.at ?? 0, c.received[0]?.at ?? 0];
    expect(a - b).toBeGreaterThanOrEqual(40);
  });

  test.each([429, 502, 504])("%i is retried", async (code) => {
    const c = scripted([status(code), status(200)]);
    expect((await post(target(c.url), 5000)).result.ok).toBe(true);
    expect(c.received.length).toBe(2);
  });

  test.each([400, 401, 404, 500])(
    "%i is not retried and names the status and a readable body",
    async (code) => {
      const c = scripted([status(code, { "content-type": "text/plain" }, "bad\nthing")]);
      const { result } = await post(target(c.url), 5000);
      expect(result).toEqual({
        ok: false,
        reason: expect.stringMatching(new RegExp(`^collector answered ${code}.*: bad thing$`)),
      });
      expect(c.received.length).toBe(1);
    },
  );

  test("Retry-After that fits the budget is honoured", async () => {
    const c = scripted([status(429, { "retry-after": "1" }), status(200)]);
    const { result } = await post(target(c.url), 3000);
    expect(result.ok).toBe(true);
    expect((c.received[1]?.at ?? 0) - (c.received[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
  });

  test("Retry-After beyond the deadline: gives up at once instead of waiting", async () => {
    const c = scripted([status(503, { "retry-after": "30" }), status(200)]);
    const { result, tookMs } = await post(target(c.url), 5000);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/^collector answered 503/) });
    expect(c.received.length).toBe(1);
    expect(tookMs).toBeLessThan(500);
  });

  test("a collector that keeps answering 503 is given up on before the deadline", async () => {
    const c = scripted([status(503)]);
    const { result, tookMs } = await post(target(c.url), 400);
    expect(result).toEqual({
      ok: false,
      reason: expect.stringMatching(/^collector answered 503.*\(\d attempts\)$/),
    });
    expect(tookMs).toBeLessThan(450);
  });

  test("a slow collector is cut at the deadline", async () => {
    const c = scripted([() => "hang"]);
    const { result, tookMs } = await post(target(c.url), 300);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/^no answer within \d+ ms$/) });
    expect(tookMs).toBeGreaterThanOrEqual(250);
    expect(tookMs).toBeLessThan(600);
    expect(c.received.length).toBe(1);
  });

  test("OTEL_EXPORTER_OTLP_TIMEOUT shorter than the budget bounds the request", async () => {
    const c = scripted([() => "hang"]);
    const { result, tookMs } = await post(target(c.url, { timeoutMs: 200 }), 5000);
    expect(result).toEqual({ ok: false, reason: "no answer within 200 ms" });
    expect(tookMs).toBeLessThan(600);
  });

  test("a dead port returns within a second, naming the failure and the attempts", async () => {
    const { result, tookMs } = await post(target(deadUrl), 5000);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/.+ \(3 attempts\)$/) });
    expect(tookMs).toBeLessThan(1000);
  });

  test("configured headers cannot change the body's type or encoding", async () => {
    const c = scripted();
    const headers = { "content-type": "text/plain", "Content-Encoding": "br", "x-a": "1" };
    await post(target(c.url, { protocol: "http/protobuf", headers }), 5000);
    expect(c.received[0]?.headers).toMatchObject({ "content-type": "application/x-protobuf", "x-a": "1" });
    expect(c.received[0]?.headers["content-encoding"]).toBeUndefined();
  });

  test("no time left: no request at all", async () => {
    const c = scripted();
    const result = await postOtlp(target(c.url), PAYLOAD, { deadline: Date.now() - 1 });
    expect(result).toEqual({ ok: false, reason: "flush deadline reached" });
    expect(c.received.length).toBe(0);
  });
});

describe("createTelemetry: what the collector answers", () => {
  test("a partial success is a warning naming how many were rejected", async () => {
    const answer = JSON.stringify({ partialSuccess: { rejectedSpans: 1, errorMessage: "span too old" } });
    const c = scripted([() => new Response(answer, { headers: { "content-type": "application/json" } })]);
    const { warnings } = await tickAndFlush({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${c.url}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_METRICS_EXPORTER: "none",
    });
    expect(warnings).toEqual([
      `telemetry not exported: traces to ${c.url}/v1/traces: collector rejected 1 spans: span too old`,
    ]);
  });

  test("503 then 200 through shutdown: exported, no warning", async () => {
    const c = scripted([status(503), () => new Response(new Uint8Array())]);
    const { warnings } = await tickAndFlush({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${c.url}/v1/traces`,
      OTEL_METRICS_EXPORTER: "none",
    });
    expect(warnings).toEqual([]);
    expect(c.received.map((r) => typeof r.decoded)).toEqual(["object", "object"]);
  });
});
