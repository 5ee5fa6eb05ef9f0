// k8s/monitoring must read the series the product really exports: every image_refresh_* name in
// the rules and the dashboard is checked against the shared METRICS list after the Prometheus
// translation, and the PrometheusRule must hold exactly the groups promtool checks.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROMETHEUS_RULE_PATH, RULES_PATH, toPrometheusRule } from "../k8s/monitoring/generate.ts";
import { METRICS, prometheusName, prometheusSeriesNames } from "../lib/telemetry/metrics.ts";
import { ROOT_SPAN_NAME } from "../lib/telemetry/tracing.ts";
import { needTool } from "./tools.ts";

const DIR = join(import.meta.dir, "..", "k8s", "monitoring");
const noPromtool = needTool("promtool", { apt: "prometheus" });
const read = (name: string) => readFileSync(join(DIR, name), "utf8");
type Rule = { alert: string; expr: string };
const rules = Bun.YAML.parse(read("rules.yaml")) as { groups: Array<{ rules: Rule[] }> };
const dashboard = JSON.parse(read("dashboard.json")) as {
  panels: Array<{ title: string; type: string; targets: Array<{ expr?: string; query?: string }> }>;
};
const exprs = [
  ...rules.groups.flatMap((g) => g.rules.map((r) => r.expr)),
  ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr ?? "")),
];
/** Attribute labels that share the metric prefix (image_refresh.outcome). */
const LABELS = new Set(["image_refresh_outcome"]);
const used = (prefix: string) =>
  [...new Set(exprs.flatMap((e) => e.match(new RegExp(`\\b${prefix}[a-z0-9_]+`, "g")) ?? []))].filter(
    (n) => !LABELS.has(n),
  );

describe("Prometheus names", () => {
  test.each([
    ["image_refresh.attempts", "image_refresh_attempts_total"],
    ["image_refresh.ticks", "image_refresh_ticks_total"],
    ["image_refresh.locked_out", "image_refresh_locked_out"],
    ["image_refresh.skip_streak", "image_refresh_skip_streak"],
    ["image_refresh.last_success_timestamp", "image_refresh_last_success_timestamp_seconds"],
    ["image_refresh.tick.duration", "image_refresh_tick_duration_seconds"],
    ["image_refresh.rollout.duration", "image_refresh_rollout_duration_seconds"],
  ])("%s becomes %s", (otlp, prom) => {
    const def = METRICS.find((m) => m.name === otlp);
    if (!def) throw new Error(`${otlp} is not in METRICS`);
    expect(prometheusName(def)).toBe(prom);
  });

  test("every image_refresh series in the rules and the dashboard is one we export", () => {
    const known = new Set(prometheusSeriesNames());
    const names = used("image_refresh_");
    expect(names.length).toBeGreaterThan(8);
    expect(names.filter((n) => !known.has(n))).toEqual([]);
  });

  test("the state gauges and counters the SPEC names are all watched somewhere", () => {
    const names = new Set(used("image_refresh_"));
    for (const m of METRICS) {
      const base = prometheusName(m);
      const watched = m.kind === "histogram" ? names.has(`${base}_bucket`) : names.has(base);
      expect({ metric: m.name, watched }).toEqual({ metric: m.name, watched: true });
    }
  });

  test("kube-state-metrics series are real ones", () => {
    const ksm = new Set([
      "kube_job_status_failed",
      "kube_job_status_start_time",
      "kube_cronjob_status_last_successful_time",
      "kube_cronjob_status_last_schedule_time",
      "kube_cronjob_spec_suspend",
    ]);
    expect(used("kube_").filter((n) => !ksm.has(n))).toEqual([]);
  });
});

describe("rules", () => {
  test("prometheusrule.yaml is generated from rules.yaml (run: npx bun k8s/monitoring/generate.ts)", () => {
    const plain = readFileSync(RULES_PATH, "utf8");
    const cr = readFileSync(PROMETHEUS_RULE_PATH, "utf8");
    expect(cr).toBe(toPrometheusRule(plain));
    const parsed = Bun.YAML.parse(cr) as { kind: string; spec: unknown };
    expect(parsed.kind).toBe("PrometheusRule");
    expect(parsed.spec).toEqual(rules);
  });

  test("per-tick gauges are read through max_over_time, not as instant vectors", () => {
    for (const name of [
      "image_refresh_locked_out",
      "image_refresh_frozen",
      "image_refresh_last_success_timestamp_seconds",
    ]) {
      const uses = exprs.filter((e) => e.includes(name));
      expect(uses.length).toBeGreaterThan(0);
      for (const e of uses) expect(e).toMatch(new RegExp(`max_over_time\\(${name}\\[`));
    }
  });

  // CI installs promtool (Debian package `prometheus`); where it is missing this test fails,
  // as the manifest checks do without kubectl: rules that were not checked are not a pass.
  test.skipIf(noPromtool)("promtool accepts the rules and their unit tests", () => {
    const promtool = Bun.which("promtool");
    if (!promtool)
      throw new Error("Cannot check the rules: promtool is not on PATH (CI installs Debian's prometheus)");
    for (const args of [
      ["check", "rules", "rules.yaml"],
      ["test", "rules", "rules.test.yaml"],
    ]) {
      const run = Bun.spawnSync([promtool, ...args], { cwd: DIR, stdout: "pipe", stderr: "pipe" });
      expect({ args, code: run.exitCode, out: `${run.stdout}${run.stderr}` }).toMatchObject({
        args,
        code: 0,
      });
    }
  });
});

describe("dashboard and collector config", () => {
  test("the traces panel lists root spans by name", () => {
    const traces = dashboard.panels.find((p) => p.targets.some((t) => t.query));
    expect(traces?.targets[0]?.query).toContain(`name = "${ROOT_SPAN_NAME}"`);
  });

  test("the locked_out timeline is a state timeline per state object", () => {
    const panel = dashboard.panels.find((p) =>
      p.targets.some((t) => t.expr?.includes("image_refresh_locked_out")),
    );
    expect(panel?.type).toBe("state-timeline");
    expect(panel?.targets[0]?.expr).toContain("k8s_namespace_name");
  });

  test("deltatocumulative runs in the metrics pipeline with max_stale above the schedule", () => {
    const cfg = Bun.YAML.parse(read("otel-collector.yaml")) as {
      processors: { deltatocumulative: { max_stale: string } };
      service: { pipelines: { metrics: { processors: string[]; exporters: string[] } } };
    };
    const schedule = read("../base/cronjob.yaml").match(/schedule: "\*\/(\d+) \* \* \* \*"/);
    const scheduleMinutes = Number(schedule?.[1] ?? 60);
    const stale = cfg.processors.deltatocumulative.max_stale.match(/^(\d+)([mh])$/);
    const staleMinutes = Number(stale?.[1]) * (stale?.[2] === "h" ? 60 : 1);
    expect(staleMinutes).toBeGreaterThan(scheduleMinutes);
    expect(cfg.service.pipelines.metrics.processors[0]).toBe("deltatocumulative");
    expect(cfg.service.pipelines.metrics.exporters).toContain("prometheus");
  });
});
