// THE STORY, told by the compiled binary's telemetry alone: first observation, a refresh, a
// workload that flaps three times, the lockout, a human's rearm, a refresh, quiet ticks. The
// attempt ticks and the lockout form one chain of span links; the exported gauges and counters,
// laid on a 5-minute CronJob timeline, drive `promtool test rules` against k8s/monitoring/rules.yaml.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Outcome } from "../../lib/outcomes.ts";
import { type CollectedSpan, type Collector, rootSpan, startCollector, sumOf } from "../../sim/collector.ts";
import { needTool } from "../support/tools.ts";
import { PREFIX, startWorld, type World } from "../support/world.ts";
import { type Exported, gauges, imageGauges, runWith, useRegistryCredentials } from "./e2e.ts";

const RULES = join(import.meta.dir, "..", "..", "k8s", "monitoring", "rules.yaml");
const promtoolTest = test.skipIf(needTool("promtool", { apt: "prometheus" }));
const TICK_MINUTES = 5; // k8s/base/cronjob.yaml's schedule

interface Step {
  name: string;
  before?: (w: World) => void;
  args?: string[];
  outcome?: Outcome;
  code: 0 | 1;
}

const STEPS: Step[] = [
  { name: "first observation", outcome: "recorded", code: 0 },
  {
    name: "refresh",
    before: (w) => void w.registry.push("myorg/api", "stable"),
    outcome: "refreshed",
    code: 0,
  },
  {
    name: "flap 1",
    before: (w) => {
      // A bad build: each attempt fails and is reverted to the old build.
      const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
      w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    },
    outcome: "failed",
    code: 1,
  },
  { name: "flap 2", outcome: "failed", code: 1 },
  // The failure that reaches the maximum announces the lockout on its own tick.
  { name: "flap 3", outcome: "locked_out", code: 1 },
  // A lockout needs a human: each tick that holds it exits 1 (a failed Job).
  { name: "lockout", outcome: "locked_out", code: 1 },
  { name: "lockout holds", outcome: "locked_out", code: 1 },
  // Not a tick: no sample on the timeline.
  { name: "rearm", args: ["rearm"], code: 0 },
  {
    name: "refresh after rearm",
    // The workload was fixed: the same build now comes up.
    before: (w) => w.api.failImages("DaemonSet", "agents", "node-agent", []),
    outcome: "refreshed",
    code: 0,
  },
  { name: "quiet 1", outcome: "noop", code: 0 },
  { name: "quiet 2", outcome: "noop", code: 0 },
];

let w: World;
let c: Collector;
let dir: string;
/** Per step, what its process exported; filled once in beforeAll, read by every test. */
const runs = new Map<string, Exported>();
/** The stored attempt traceparent after each step. */
const stored = new Map<string, string | undefined>();
let ticks: Array<{ step: Step; e: Exported; root: CollectedSpan }> = [];

beforeAll(async () => {
  w = await startWorld();
  useRegistryCredentials(w);
  c = startCollector();
  dir = mkdtempSync(join(tmpdir(), "image-refresh-story-"));
  for (const step of STEPS) {
    step.before?.(w);
    runs.set(step.name, await runWith(w, c, "http/protobuf", step.args));
    stored.set(step.name, w.ours()[`${PREFIX}/refresh-attempt-traceparent-node-agent`]);
  }
  ticks = STEPS.filter((s) => s.outcome).map((step) => {
    const e = runs.get(step.name) as Exported;
    return { step, e, root: rootSpan(e) };
  });
}, 40_000);
afterAll(async () => {
  await Promise.all([w.stop(), c.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const tick = (name: string) => ticks.find((t) => t.step.name === name) as (typeof ticks)[number];
const ref = (s: CollectedSpan) => ({ traceId: s.traceId, spanId: s.spanId });

test("every step ends as the story says", () => {
  expect(STEPS.map((s) => [s.name, runs.get(s.name)?.code])).toEqual(STEPS.map((s) => [s.name, s.code]));
  expect(ticks.map((t) => t.root.attributes["image_refresh.outcome"])).toEqual(
    ticks.map((t) => t.step.outcome),
  );
});

test("every export of the story carries one stable resource", () => {
  const exported = [...runs.values()].flatMap((e) => [...e.spans, ...e.metrics]);
  const ids = new Set(
    exported.map((x) => `${x.resource["service.name"]} ${x.resource["service.instance.id"]}`),
  );
  // The installation is the store, <namespace>/<name>.
  expect([...ids]).toEqual(["image-refresh image-refresh/image-refresh-state"]);
});

test("attempt ticks and the lockout form one chain of span links", () => {
  // Each tick is its own trace; the story is told by links, never by parents.
  expect(new Set(ticks.map((t) => t.root.traceId)).size).toBe(ticks.length);
  const links = Object.fromEntries(ticks.map((t) => [t.step.name, t.root.links]));
  expect(links).toEqual({
    "first observation": [],
    refresh: [],
    "flap 1": [],
    "flap 2": [ref(tick("flap 1").root)],
    "flap 3": [ref(tick("flap 2").root)],
    lockout: [ref(tick("flap 3").root)],
    "lockout holds": [ref(tick("flap 3").root)],
    // rearm removed the stored traceparent: a new story starts
    "refresh after rearm": [],
    "quiet 1": [],
    "quiet 2": [],
  });
  // The link target is what the attempt tick stored next to its count, sampled flag included.
  const flap3 = tick("flap 3").root;
  expect(stored.get("flap 3")).toBe(`00-${flap3.traceId}-${flap3.spanId}-01`);
  expect(stored.get("lockout holds")).toBe(stored.get("flap 3"));
  expect(stored.get("rearm")).toBeUndefined();
  const events = Object.fromEntries(ticks.map((t) => [t.step.name, t.root.events.map((e) => e.name)]));
  expect(events).toMatchObject({
    refresh: ["attempt", "reset"],
    "flap 1": ["attempt", "revert"],
    "flap 3": ["attempt", "revert", "lockout"],
    lockout: ["lockout"],
    "refresh after rearm": ["attempt", "reset"],
  });
  expect(tick("flap 3").root.events[0]?.attributes).toEqual({
    "image_refresh.image": "node-agent",
    "image_refresh.attempt": 3,
  });
  expect(tick("lockout").root.events[0]?.attributes).toEqual({
    "image_refresh.image": "node-agent",
    "image_refresh.attempt": 3,
  });
});

test("rearm is one trace: its own root span over its GET and PATCH, linked to the story it ends", () => {
  const spans = (runs.get("rearm") as Exported).spans;
  const roots = spans.filter((s) => s.parentSpanId === "");
  expect(roots.map((s) => s.name)).toEqual(["image-refresh rearm"]);
  const root = roots[0] as CollectedSpan;
  expect(spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name)).toEqual(["GET", "PATCH"]);
  expect(root.links).toEqual([ref(tick("flap 3").root)]);
  expect(root.attributes).toMatchObject({
    "image_refresh.rearm.result": "cleared",
    "image_refresh.installation": "image-refresh/image-refresh-state",
  });
  expect(root.events).toEqual([
    {
      name: "rearm",
      attributes: { "image_refresh.images": "node-agent", "image_refresh.attempt.node-agent": 3 },
    },
  ]);
});

test("counters add up over the story", () => {
  const all = { metrics: ticks.flatMap((t) => t.e.metrics) };
  const counts = Object.fromEntries(
    ["attempts", "resets", "lockouts", "skips"].map((n) => [n, sumOf(all, `image_refresh.${n}`)]),
  );
  // A lockout is counted on every tick it holds: from flap 3, which reached it, on.
  expect(counts).toEqual({ attempts: 5, resets: 2, lockouts: 3, skips: 0 });
  const outcomes = ["recorded", "refreshed", "failed", "locked_out", "noop"].map((o) => [
    o,
    sumOf(all, "image_refresh.ticks", { "image_refresh.outcome": o }),
  ]);
  expect(Object.fromEntries(outcomes)).toEqual({
    recorded: 1,
    refreshed: 2,
    failed: 2,
    locked_out: 3,
    noop: 2,
  });
});

test("gauges follow the store tick by tick, per image; last success only on exit-0 ticks", () => {
  const series = (name: string) =>
    ticks.map((t) => gauges(t.e)[`image_refresh.${name}` as "image_refresh.last_success_timestamp"]);
  const imageSeries = (key: string, name: string) =>
    ticks.map((t) => imageGauges(t.e)[key]?.[`image_refresh.${name}` as "image_refresh.locked_out"]);
  expect(imageSeries("node-agent", "attempt_count")).toEqual([0, 0, 1, 2, 3, 3, 3, 0, 0, 0]);
  expect(imageSeries("api", "attempt_count")).toEqual(ticks.map(() => 0));
  // Lockout is decided by the count alone, so the third failure already leaves the
  // image locked out: the gauge says so one tick before the flap marker is written.
  expect(imageSeries("node-agent", "locked_out")).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 0]);
  expect(imageSeries("api", "locked_out")).toEqual(ticks.map(() => 0));
  // Every target settles throughout: no image skips or freezes, and each tick says so.
  for (const key of ["api", "node-agent"]) {
    expect(imageSeries(key, "frozen")).toEqual(ticks.map(() => 0));
    expect(imageSeries(key, "skip_streak")).toEqual(ticks.map(() => 0));
  }
  const success = series("last_success_timestamp");
  expect(success.map((v) => v !== undefined)).toEqual(ticks.map((t) => t.step.code === 0));
  for (const [i, t] of ticks.entries())
    if (success[i] !== undefined) expect(success[i]).toBeWithin(t.e.startedS, t.e.endedS + 1);
});

/** Prometheus series as the Collector's exporter names them, one sample per tick ("_" = none). */
function inputSeries(): Array<{ series: string; values: string }> {
  const labels = (attrs: Record<string, unknown>) =>
    Object.entries(attrs)
      .map(([k, v]) => `${k.replaceAll(".", "_")}="${v}"`)
      .join(", ");
  const out: Array<{ series: string; values: string }> = [];
  const gauge = (otlp: string, prom: string, value: (v: number, i: number) => number, image?: string) => {
    const pts = ticks.map(
      (t) =>
        t.e.metrics
          .filter((m) => m.name === otlp)
          .flatMap((m) => m.points)
          .filter((p) => image === undefined || p.attributes["image_refresh.image"] === image)[0],
    );
    const attrs = pts.find((p) => p)?.attributes ?? {};
    out.push({
      series: `${prom}{${labels(attrs)}}`,
      values: pts.map((p, i) => (p ? value(p.value, i) : "_")).join(" "),
    });
  };
  gauge("image_refresh.locked_out", "image_refresh_locked_out", (v) => v, "node-agent");
  gauge("image_refresh.locked_out", "image_refresh_locked_out", (v) => v, "api");
  gauge("image_refresh.frozen", "image_refresh_frozen", (v) => v, "node-agent");
  gauge("image_refresh.frozen", "image_refresh_frozen", (v) => v, "api");
  // Wall-clock seconds moved onto promtool's timeline, where tick i happens at i * 5 minutes.
  gauge(
    "image_refresh.last_success_timestamp",
    "image_refresh_last_success_timestamp_seconds",
    (_, i) => i * TICK_MINUTES * 60,
  );
  // deltatocumulative: the running sum of each outcome's delta points.
  const outcomes = new Set(ticks.map((t) => String(t.root.attributes["image_refresh.outcome"])));
  for (const o of outcomes) {
    let total = 0;
    const values = ticks.map((t) => {
      const d = sumOf(t.e, "image_refresh.ticks", { "image_refresh.outcome": o });
      total += d;
      return total === 0 ? "_" : String(total);
    });
    const attrs =
      ticks.flatMap((t) => t.e.metrics).find((m) => m.name === "image_refresh.ticks")?.points[0]
        ?.attributes ?? {};
    out.push({
      series: `image_refresh_ticks_total{${labels({ ...attrs, "image_refresh.outcome": o })}}`,
      values: values.join(" "),
    });
  }
  return out;
}

promtoolTest(
  "promtool: the lockout alert fires from the lockout until the tick after rearm reports it clear",
  () => {
    const locked = ticks.map((t) => imageGauges(t.e)["node-agent"]?.["image_refresh.locked_out"] ?? 0);
    // Evaluated a minute after each tick: the rule reads the last value a tick reported.
    const firing = locked.map((v) => v === 1);
    expect(firing.flatMap((f, i) => (f ? [ticks[i]?.step.name] : []))).toEqual([
      "flap 3",
      "lockout",
      "lockout holds",
    ]);
    const rules = Bun.YAML.parse(readFileSync(RULES, "utf8")) as {
      groups: Array<{ rules: Array<{ alert: string; annotations: Record<string, string> }> }>;
    };
    const rule = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === "ImageRefreshLockedOut");
    // The alert's labels are the gauge's attributes after translation, less what `by` drops.
    const point = ticks
      .flatMap((t) => t.e.metrics.filter((m) => m.name === "image_refresh.locked_out"))
      .flatMap((m) => m.points)
      .find((p) => p.attributes["image_refresh.image"] === "node-agent");
    const pointLabels: Record<string, string> = Object.fromEntries(
      Object.entries(point?.attributes ?? {}).map(([k, v]) => [k.replaceAll(".", "_"), String(v)]),
    );
    expect(pointLabels).toEqual({
      image_refresh_installation: "image-refresh/image-refresh-state",
      image_refresh_image: "node-agent",
      container_image_name: "myorg/node-agent",
    });
    const expand = (s: string) =>
      s.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, k: string) => pointLabels[k] ?? "");
    const lockedAlert = {
      exp_labels: { severity: "warning", ...pointLabels },
      exp_annotations: Object.fromEntries(
        Object.entries(rule?.annotations ?? {}).map(([k, v]) => [k, expand(v)]),
      ),
    };
    const evals = ticks.flatMap((_, i) => {
      const eval_time = `${i * TICK_MINUTES + 1}m`;
      return [
        // Firing with exactly the gauge's labels, the store's installation label among them.
        { eval_time, alertname: "ImageRefreshLockedOut", exp_alerts: firing[i] ? [lockedAlert] : [] },
        // The flaps fail for 15 minutes only: far from the 2 h without success that pages.
        { eval_time, alertname: "ImageRefreshNoRecentSuccess", exp_alerts: [] },
        { eval_time, alertname: "ImageRefreshFrozen", exp_alerts: [] },
        { eval_time, alertname: "ImageRefreshNoTicks", exp_alerts: [] },
      ];
    });
    const file = join(dir, "story.test.yaml");
    // JSON is YAML, and promtool reads it as such.
    writeFileSync(
      file,
      JSON.stringify({
        rule_files: [RULES],
        evaluation_interval: "1m",
        tests: [{ interval: `${TICK_MINUTES}m`, input_series: inputSeries(), alert_rule_test: evals }],
      }),
    );
    const promtool = Bun.which("promtool");
    // CI installs it (Debian package prometheus); an alert evaluation that did not run is not a pass.
    if (!promtool)
      throw new Error(
        "Cannot evaluate the story's alerts: promtool is not on PATH (CI installs Debian's prometheus)",
      );
    const run = Bun.spawnSync([promtool, "test", "rules", file], { stdout: "pipe", stderr: "pipe" });
    expect({ code: run.exitCode, out: `${run.stdout}${run.stderr}` }).toMatchObject({ code: 0 });
  },
);
