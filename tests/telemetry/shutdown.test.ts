// A collector that is down, hangs or answers 500 must never hold a tick past the flush bound nor
// make shutdown throw (the flush takes at most 5 s in all; an unreachable collector never changes
// the exit code). The bounds are asserted generously: this is behaviour, not a benchmark.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createTelemetry } from "../../exporter.ts";
import { type Collector, startCollector } from "../../sim/collector.ts";

const STATE = { storeNamespace: "db", storeName: "pg", version: "0" } as const;
const collectors: Record<"hang" | "fail500", Collector> = {} as never;
let downUrl = "";

beforeAll(async () => {
  collectors.hang = startCollector({ mode: "hang" });
  collectors.fail500 = startCollector({ mode: "fail500" });
  const gone = startCollector();
  downUrl = gone.url;
  await gone.stop();
});
afterAll(async () => {
  await Promise.all(Object.values(collectors).map((c) => c.stop()));
});

const endpoint = (mode: string) => (mode === "down" ? downUrl : collectors[mode as "hang" | "fail500"].url);

describe.each(["down", "hang", "fail500"])("collector %s", (mode) => {
  test("shutdown(5000) resolves within the bound and warns", async () => {
    const warnings: string[] = [];
    const t = await createTelemetry({
      ...STATE,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint(mode) },
      warn: (m) => warnings.push(m),
    });
    await t.tick({}, async () => {});
    t.counter("image_refresh.ticks", 1, { "image_refresh.outcome": "noop" });
    const started = performance.now();
    await t.shutdown(5000);
    expect(performance.now() - started).toBeLessThan(6000);
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.join("\n")).toContain("telemetry not exported");
  }, 10_000);
});

// The promise resolving is not enough: a socket or retry timer left behind would keep the
// process alive after main() returns. A child process shows whether it exits on time.
const CHILD = `
  const { createTelemetry } = await import(${JSON.stringify(join(import.meta.dir, "..", "..", "exporter.ts"))});
  const t = await createTelemetry({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: process.argv.at(-1) },
    storeNamespace: "apps", storeName: "api", version: "0", warn() {} });
  await t.tick({}, async () => {});
  t.gauge("image_refresh.locked_out", 0, {});
  const started = Date.now();
  await t.shutdown(1500);
  process.stdout.write(JSON.stringify({ took: Date.now() - started, returnedAt: Date.now() }));
`;

test.each(["down", "hang", "fail500"])(
  "a process flushing to a collector that is %s exits by the bound",
  async (mode) => {
    const child = Bun.spawn([process.execPath, "-e", CHILD, endpoint(mode)], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const out = await new Response(child.stdout).text();
    await child.exited;
    const exitedAt = Date.now();
    const { took, returnedAt } = JSON.parse(out) as { took: number; returnedAt: number };
    expect(child.exitCode).toBe(0);
    expect(took).toBeLessThan(2500);
    expect(exitedAt - returnedAt).toBeLessThan(1000);
  },
  10_000,
);

// A collector behind basic auth is sometimes configured as https://user:token@host; the warning
// that names the endpoint must not carry the credentials into the logs.
test("a failed export's warning names the endpoint without its credentials", async () => {
  const warnings: string[] = [];
  const withCreds = downUrl.replace("http://", "http://collector-user:s3cr3t-collector-token@");
  const t = await createTelemetry({
    ...STATE,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: withCreds },
    warn: (m) => warnings.push(m),
  });
  await t.tick({}, async () => {});
  await t.shutdown(2000);
  const text = warnings.join("\n");
  expect(text).toContain("telemetry not exported");
  expect(text).toContain(`${downUrl.replace("http://", "http://***@")}/v1/traces`);
  expect(text).not.toContain("s3cr3t-collector-token");
  expect(text).not.toContain("collector-user");
});

test("an endpoint that is not a URL is refused without echoing what may be a secret", async () => {
  const warnings: string[] = [];
  await createTelemetry({
    ...STATE,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: "user:s3cr3t@collector:4318" },
    warn: (m) => warnings.push(m),
  });
  expect(warnings.join("\n")).toContain("OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL");
  expect(warnings.join("\n")).not.toContain("s3cr3t");
});
