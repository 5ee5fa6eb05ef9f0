// Every warning is printed once: the general OTEL_EXPORTER_OTLP_* variables are read for traces
// and for metrics, and a bad value there used to be warned about once per signal.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Collector, startCollector } from "../../sim/collector.ts";
import { startWorld, type World } from "../support/world.ts";

let w: World;
let collector: Collector;
beforeAll(async () => {
  w = await startWorld();
  collector = startCollector();
});
afterAll(async () => {
  await Promise.all([w.stop(), collector.stop()]);
});

const count = (text: string, part: string) => text.split(part).length - 1;

test("a bad general OTLP setting is one WARNING line, not one per signal", async () => {
  const r = await w.run([], {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    OTEL_EXPORTER_OTLP_TIMEOUT: "-5",
  });
  expect(r.code).toBe(0);
  expect(count(r.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")).toBe(1);
  expect(count(r.stderr, "OTEL_EXPORTER_OTLP_TIMEOUT ignored")).toBe(1);
  const warnings = r.stderr.split("\n").filter((l) => l.includes("WARNING"));
  expect(new Set(warnings).size).toBe(warnings.length);
});
