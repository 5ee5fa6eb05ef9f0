// Captures, from the real pipeline, the series the promtool tests are built from: one
// installation ticks through a short story (first observation, quiet ticks, an image unresolved
// twice, a state object that stops settling until it freezes, then its CronJob stops), and
// Prometheus' raw samples of every image_refresh series are written, one per scrape (= one
// minute of real time), in promtool's notation to k8s/monitoring/captured.json, with the minute
// and outcome of each tick. tests/monitoring-captured.test.ts fails when series.ts and
// exposition.ts (what rules.test.yaml is written from) no longer produce these series.
// Run: npx bun tests/real/pipeline/capture.ts && npx bun k8s/monitoring/generate.ts
// (needs the peers of this tier; about a minute)
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FACTOR, minutes } from "./compress.ts";
import { MONITORING } from "./configs.ts";
import { stateObject } from "./identity.ts";
import { schedule, startInstallation, ticksOf } from "./installations.ts";
import { needPeers } from "./peers.ts";
import { startPipeline } from "./pipeline.ts";
import { type Raw, toCapture } from "./samples.ts";

export const CAPTURED = join(MONITORING, "captured.json");
const NAME = "capture";
const AGENT_MANIFESTS = /\/v2\/myorg\/node-agent\/manifests\//;
/** Ticks at minutes 0..40; after the last one, long enough for every series to expire (1h) and more. */
const LAST_TICK = 8;
const UNTIL_MINUTES = LAST_TICK * 5 + 75;

async function main() {
  const peers = needPeers("tests/real/pipeline/capture.ts");
  if (!peers) process.exit(1);
  const p = await startPipeline(peers);
  const i = await startInstallation(NAME, "http/protobuf", () => p.otlpUrl);
  const s = stateObject(NAME);
  i.before = (n) => {
    if (n === 2) i.world.registry.faults.add({ path: AGENT_MANIFESTS, fault: { type: "status", code: 404 } });
    if (n === 4) i.world.registry.faults.clear();
    if (n === 6) i.world.api.setMode(s.kind, s.namespace, s.name, "unsettled");
    if (n === LAST_TICK + 1) i.active = false;
  };
  // Scrapes are every compressed minute from the pipeline's first one; the first tick lands on one.
  const t0 = Date.now();
  const sched = schedule([i]);
  await Bun.sleep(minutes(UNTIL_MINUTES));
  await sched.stop();
  const end = t0 + minutes(UNTIL_MINUTES);
  const range = `${Math.ceil(minutes(UNTIL_MINUTES + 5))}ms`;
  const url = `http://127.0.0.1:${p.ports.prometheus}/api/v1/query?query=${encodeURIComponent(
    `{__name__=~"image_refresh_.+"}[${range}]`,
  )}&time=${end / 1000}`;
  const body = (await (await fetch(url)).json()) as { data: { result: Raw[] } };
  const ticks = ticksOf(i).map((r) => ({ endMs: r.end - t0, code: r.code, outcome: outcomeOf(r.stderr) }));
  const capture = toCapture(body.data.result, {
    t0,
    stepMs: minutes(1),
    factor: FACTOR,
    until: UNTIL_MINUTES,
    ticks,
  });
  writeFileSync(CAPTURED, `${JSON.stringify({ factor: FACTOR, ...capture }, null, 2)}\n`);
  // As the repository's formatter writes JSON, so that a fresh capture passes the lint.
  Bun.spawnSync(["npx", "biome", "format", "--write", CAPTURED], { stdout: "ignore", stderr: "ignore" });
  console.log(`wrote ${CAPTURED}: ${capture.series.length} series, ${capture.ticks.length} ticks`);
  await i.world.stop();
  await p.stop();
}

function outcomeOf(stderr: string): string {
  return /outcome=(\w+)/.exec(stderr)?.[1] ?? "unknown";
}

if (import.meta.main) await main();
