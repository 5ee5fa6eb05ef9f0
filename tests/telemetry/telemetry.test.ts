// createTelemetry against the simulated collector, in-process, in both OTLP encodings: what a
// dashboard will read (span tree, events, links, temporality, gauges at 0, resource) must arrive.
import { afterEach, describe, expect, test } from "bun:test";
import { createTelemetry } from "../../exporter.ts";
import { parseTraceparent } from "../../lib/telemetry/traceparent.ts";
import type { Telemetry } from "../../lib/telemetry.ts";
import { type Collector, childrenOf, points, rootSpan, startCollector, sumOf } from "../../sim/collector.ts";

const STORE = {
  storeNamespace: "apps",
  storeName: "api",
  version: "9.9.9",
} as const;
const EARLIER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

let collector: Collector | undefined;
afterEach(async () => {
  await collector?.stop();
  collector = undefined;
});

async function setup(env: Record<string, string> = {}, warnings: string[] = []) {
  collector = startCollector();
  const telemetry = await createTelemetry({
    ...STORE,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, ...env },
    warn: (m) => warnings.push(m),
  });
  return { c: collector, t: telemetry };
}

/** A tick shaped like the real one: a GET, a rollout wait with a PATCH inside, events, metrics. */
async function fakeTick(t: Telemetry) {
  const seen: Record<string, string> = {};
  await t.tick({ "k8s.namespace.name": "apps" }, async (root) => {
    await t.span("GET", { kind: "client", attributes: { "http.request.method": "GET" } }, async () => {
      seen.get = t.activeIds().spanId;
    });
    t.linkRoot([EARLIER, "garbage"]);
    root.addEvent("attempt", { "image_refresh.attempt": 2 });
    await t.span("rollout.wait", { kind: "internal" }, async () => {
      await t.span("PATCH", { kind: "client" }, async (s) => s.setError("409", "Conflict"));
    });
    root.setAttributes({ "image_refresh.outcome": "refreshed" });
    seen.root = t.activeIds().spanId;
    seen.traceparent = t.rootTraceparent();
  });
  t.counter("image_refresh.attempts", 1, { "container.image.name": "myorg/api" });
  t.counter("image_refresh.ticks", 1, { "image_refresh.outcome": "refreshed" });
  t.gauge("image_refresh.locked_out", 0, {});
  t.gauge("image_refresh.attempt_count", 2, {});
  t.histogram("image_refresh.tick.duration", 1.5, {});
  return seen;
}

describe.each(["http/protobuf", "http/json"])("createTelemetry over %s", (protocol) => {
  const contentType = protocol === "http/json" ? "application/json" : "application/x-protobuf";

  test("exports the tick's span tree with outcome, events and links", async () => {
    const { c, t } = await setup({ OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
    const seen = await fakeTick(t);
    await t.shutdown(5000);
    expect(c.requests.map((r) => [r.path, r.contentType])).toEqual([
      ["/v1/traces", contentType],
      ["/v1/metrics", contentType],
    ]);
    const root = rootSpan(c);
    expect(root.attributes["image_refresh.outcome"]).toBe("refreshed");
    expect(root.kind).toBe("internal");
    expect(root.events).toEqual([{ name: "attempt", attributes: { "image_refresh.attempt": 2 } }]);
    expect(root.links).toEqual([{ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" }]);
    expect(seen.traceparent).toBe(`00-${root.traceId}-${root.spanId}-01`);
    expect(seen.root).toBe(root.spanId);
    const children = childrenOf(c, root);
    expect(children.map((s) => [s.name, s.kind])).toEqual([
      ["GET", "client"],
      ["rollout.wait", "internal"],
    ]);
    expect(children[0]?.spanId).toBe(seen.get as string);
    const wait = children[1];
    if (!wait) throw new Error("no rollout.wait span");
    const [patch] = childrenOf(c, wait);
    expect(patch?.name).toBe("PATCH");
    expect(patch?.status).toEqual({ code: "error", message: "Conflict" });
    expect(patch?.attributes["error.type"]).toBe("409");
  });

  test("exports delta counters, gauges at 0 and histograms with the installation on every point", async () => {
    const { c, t } = await setup({ OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
    await fakeTick(t);
    await t.shutdown(5000);
    const byName = Object.fromEntries(c.metrics.map((m) => [m.name, m]));
    expect(byName["image_refresh.attempts"]).toMatchObject({
      type: "sum",
      temporality: "delta",
      monotonic: true,
    });
    expect(byName["image_refresh.locked_out"]?.type).toBe("gauge");
    expect(points(c, "image_refresh.locked_out")).toEqual([
      { value: 0, attributes: { "image_refresh.installation": "apps/api" } },
    ]);
    expect(sumOf(c, "image_refresh.attempts", { "container.image.name": "myorg/api" })).toBe(1);
    expect(sumOf(c, "image_refresh.ticks", { "image_refresh.outcome": "refreshed" })).toBe(1);
    const [duration] = points(c, "image_refresh.tick.duration");
    expect(byName["image_refresh.tick.duration"]).toMatchObject({
      type: "histogram",
      temporality: "delta",
      unit: "s",
    });
    expect(duration).toMatchObject({ value: 1.5, count: 1 });
    expect(duration?.bucketCounts?.reduce((a, b) => a + b, 0)).toBe(1);
  });

  test("names the installation (the store) on the resource", async () => {
    const { c, t } = await setup({ OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
    await fakeTick(t);
    await t.shutdown(5000);
    const expected = {
      "service.name": "image-refresh",
      "service.version": "9.9.9",
      "service.instance.id": "apps/api",
      "image_refresh.installation": "apps/api",
      "k8s.namespace.name": "apps",
    };
    expect(rootSpan(c).resource).toMatchObject(expected);
    expect(c.metrics[0]?.resource).toMatchObject(expected);
    // The store is a ConfigMap, not a workload: no workload name on the resource.
    expect(Object.keys(rootSpan(c).resource).filter((k) => k.startsWith("k8s.deployment"))).toEqual([]);
  });
});

describe("createTelemetry and the environment", () => {
  test("cumulative temporality when the env asks for it", async () => {
    const { c, t } = await setup({ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: "cumulative" });
    t.counter("image_refresh.resets", 1, {});
    t.histogram("image_refresh.rollout.duration", 42, {});
    await t.shutdown(5000);
    expect(c.metrics.map((m) => [m.name, m.temporality])).toEqual([
      ["image_refresh.resets", "cumulative"],
      ["image_refresh.rollout.duration", "cumulative"],
    ]);
  });

  test("service name, resource attributes and headers come from the env", async () => {
    const { c, t } = await setup({
      OTEL_SERVICE_NAME: "refresher",
      OTEL_RESOURCE_ATTRIBUTES: "service.instance.id=prod%2Fapi,deployment.environment.name=prod",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc,x-tenant=a",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=b",
    });
    await t.tick({}, async () => {});
    await t.shutdown(5000);
    expect(rootSpan(c).resource).toMatchObject({
      "service.name": "refresher",
      "service.instance.id": "prod/api",
      "deployment.environment.name": "prod",
    });
    expect(c.requests[0]?.headers).toMatchObject({ authorization: "Bearer abc", "x-tenant": "b" });
  });

  test("traces off: only metrics are sent, ids still correlate logs but are not sampled", async () => {
    const { c, t } = await setup({ OTEL_TRACES_EXPORTER: "none" });
    let traceparent = "";
    await t.tick({}, async () => {
      traceparent = t.rootTraceparent();
    });
    t.gauge("image_refresh.frozen", 1, {});
    await t.shutdown(5000);
    expect(parseTraceparent(traceparent)?.flags).toBe("00");
    expect(c.requests.map((r) => r.path)).toEqual(["/v1/metrics"]);
    expect(c.spans).toEqual([]);
  });

  test("OTEL_SDK_DISABLED=true gives the no-op telemetry and sends nothing", async () => {
    const { c, t } = await setup({ OTEL_SDK_DISABLED: "true" });
    await fakeTick(t);
    await t.shutdown(5000);
    expect(t.enabled).toBe(false);
    expect(c.requests).toEqual([]);
  });

  test("a thrown error marks the span and still propagates", async () => {
    const { c, t } = await setup();
    const boom = t.tick({}, () =>
      t.span("HEAD", { kind: "client" }, () => Promise.reject(new TypeError("nope"))),
    );
    await expect(boom).rejects.toThrow("nope");
    await t.shutdown(5000);
    const head = c.spans.find((s) => s.name === "HEAD");
    expect(head?.status).toEqual({ code: "error", message: "nope" });
    expect(head?.attributes["error.type"]).toBe("TypeError");
    expect(rootSpan(c).status.code).toBe("error");
  });

  test("a metric recorded as the wrong kind is dropped with one warning", async () => {
    const warnings: string[] = [];
    const { c, t } = await setup({}, warnings);
    t.counter("image_refresh.locked_out", 1, {});
    t.counter("image_refresh.locked_out", 1, {});
    t.gauge("image_refresh.skip_streak", 0, {});
    await t.shutdown(5000);
    expect(warnings).toEqual([
      "telemetry: cannot record image_refresh.locked_out as a counter (value 1); dropped",
    ]);
    expect(c.metrics.map((m) => m.name)).toEqual(["image_refresh.skip_streak"]);
  });

  test("shutdown twice exports once", async () => {
    const { c, t } = await setup();
    t.counter("image_refresh.skips", 1, {});
    await Promise.all([t.shutdown(5000), t.shutdown(5000)]);
    await t.shutdown(5000);
    expect(c.requests.map((r) => r.path)).toEqual(["/v1/metrics"]);
  });
});
