// k8s/monitoring must read the series the product really exports: every image_refresh_* name in the
// rules and the dashboard is checked against the shared METRICS list (the per-image state gauges
// included) after the Prometheus translation, the PrometheusRule must hold exactly the groups
// promtool checks, and promtool must hold every alert to its promises (k8s/monitoring/promises.ts)
// over the series the Collector really exposes.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  counter,
  exposed,
  MAX_STALE_MINUTES,
  METRIC_EXPIRATION_MINUTES,
} from "../../k8s/monitoring/exposition.ts";
import {
  BASE,
  baseRules,
  CHART_DASHBOARD_PATH,
  CHART_TEMPLATE_PATH,
  DASHBOARD_PATH,
  parseRules,
  RULE_TESTS,
  RULES_PATH,
  toRuleTests,
} from "../../k8s/monitoring/generate.ts";
import { chartTemplate, PLACEHOLDERS, renderRules } from "../../k8s/monitoring/install.ts";
import { DAYS, MINUTES } from "../../k8s/monitoring/promises.ts";
import { OUTCOMES } from "../../lib/outcomes.ts";
import { METRICS, prometheusName, prometheusSeriesNames } from "../../lib/telemetry/metrics.ts";
import { ROOT_SPAN_NAME } from "../../lib/telemetry/tracing.ts";
import { needTool } from "../support/tools.ts";

const DIR = join(import.meta.dir, "..", "..", "k8s", "monitoring");
const noPromtool = needTool("promtool", { apt: "prometheus" });
const read = (name: string) => readFileSync(join(DIR, name), "utf8");
const rulesText = read("rules.yaml");
const rules = Bun.YAML.parse(rulesText) as {
  groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
};
const alerts = parseRules(rulesText);
const dashboard = JSON.parse(read("dashboard.json")) as {
  panels: Array<{ title: string; type: string; targets: Array<{ expr?: string; query?: string }> }>;
};
const exprs = [
  ...rules.groups.flatMap((g) => g.rules.map((r) => r.expr)),
  ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr ?? "")),
];
/** Attribute labels that share the metric prefix (outcome, image, installation). */
const LABELS = new Set(["image_refresh_outcome", "image_refresh_image", "image_refresh_installation"]);
const used = (prefix: string) =>
  [...new Set(exprs.flatMap((e) => e.match(new RegExp(`\\b${prefix}[a-z0-9_]+`, "g")) ?? []))].filter(
    (n) => !LABELS.has(n),
  );
const ALL = [...METRICS];

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

  test("every metric we export, the state gauges and counters among them, is watched somewhere", () => {
    const names = new Set(used("image_refresh_"));
    for (const m of ALL) {
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
      "kube_cronjob_created",
      "kube_cronjob_status_last_schedule_time",
      "kube_cronjob_spec_suspend",
    ]);
    expect(used("kube_").filter((n) => !ksm.has(n))).toEqual([]);
  });
});

describe("rules", () => {
  test("the chart's PrometheusRule template is generated from rules.yaml (run: npx bun k8s/monitoring/generate.ts)", () => {
    expect(readFileSync(CHART_TEMPLATE_PATH, "utf8")).toBe(chartTemplate(readFileSync(RULES_PATH, "utf8")));
  });

  test("the chart's dashboard is a copy of dashboard.json (run: npx bun k8s/monitoring/generate.ts)", () => {
    expect(readFileSync(CHART_DASHBOARD_PATH, "utf8")).toBe(readFileSync(DASHBOARD_PATH, "utf8"));
  });

  test("the promtool test files are generated from promises.ts (run: npx bun k8s/monitoring/generate.ts)", () => {
    for (const t of RULE_TESTS)
      expect(readFileSync(t.path, "utf8")).toBe(toRuleTests(t.cases, t.every, baseRules(rulesText)));
  });

  // A pushed gauge is gone an hour after the last tick (metric_expiration); the state it reported
  // is still the state. An instant vector or a short max_over_time would resolve the alert then.
  test("per-tick gauges are read through last_over_time, not as instant vectors", () => {
    for (const name of [
      "image_refresh_locked_out",
      "image_refresh_frozen",
      "image_refresh_paused",
      "image_refresh_unresolved_streak",
      "image_refresh_last_success_timestamp_seconds",
      "image_refresh_last_verified_timestamp_seconds",
    ]) {
      const uses = rules.groups.flatMap((g) => g.rules.map((r) => r.expr)).filter((e) => e.includes(name));
      expect({ name, uses: uses.length > 0 }).toEqual({ name, uses: true });
      for (const e of uses) expect(e).toMatch(new RegExp(`last_over_time\\(${name}\\[`));
    }
  });

  // The installation is the store, one label on every point; a per-image alert is per image too.
  test("every alert on our series groups by the installation, and per-image ones by the image", () => {
    const perImage = ["locked_out", "paused", "frozen", "in_sync", "unresolved_streak", "last_verified"];
    for (const a of alerts.filter((r) => /\bimage_refresh_[a-z_]+(\[|\{| offset)/.test(r.expr))) {
      const lists = [...a.expr.matchAll(/\b(?:by|on) \(([^)]*)\)/g)].map((m) => m[1]?.split(/,\s*/) ?? []);
      expect({ alert: a.alert, grouped: lists.length > 0 }).toEqual({ alert: a.alert, grouped: true });
      for (const l of lists)
        expect({ alert: a.alert, l }).toEqual({
          alert: a.alert,
          l: expect.arrayContaining(["image_refresh_installation"]),
        });
      if (perImage.some((g) => a.expr.includes(`image_refresh_${g}`)))
        for (const l of lists)
          expect({ alert: a.alert, l }).toEqual({
            alert: a.alert,
            l: expect.arrayContaining(["image_refresh_image"]),
          });
    }
  });

  test("every alert says what to run, per image with the image's key", () => {
    for (const a of alerts) {
      const text = `${a.annotations?.description ?? ""}`;
      expect({ alert: a.alert, says: /`(image-refresh|kubectl) [^`]+`/.test(text) }).toEqual({
        alert: a.alert,
        says: true,
      });
      if (a.expr.includes("image_refresh_image"))
        expect({ alert: a.alert, text }).toMatchObject({
          text: expect.stringContaining("`image-refresh status {{ $labels.image_refresh_image }}`"),
        });
    }
    const locked = alerts.find((a) => a.alert === "ImageRefreshLockedOut")?.annotations?.description ?? "";
    expect(locked).toContain("`image-refresh rearm {{ $labels.image_refresh_image }}`");
    expect(locked).toContain("`image-refresh reject {{ $labels.image_refresh_image }}`");
  });

  test("every alert has a promise that it fires and one that it stays silent", () => {
    const expects = [...MINUTES, ...DAYS].flatMap((c) => c.expect);
    for (const a of alerts) {
      const mine = expects.filter((e) => e.alert === a.alert);
      expect({ alert: a.alert, fires: mine.some((e) => e.firing.length > 0) }).toEqual({
        alert: a.alert,
        fires: true,
      });
      expect({ alert: a.alert, silent: mine.some((e) => e.firing.length === 0) }).toEqual({
        alert: a.alert,
        silent: true,
      });
    }
  });

  // CI installs promtool (Debian package `prometheus`); where it is missing this test fails,
  // as the manifest checks do without kubectl: rules that were not checked are not a pass.
  // It evaluates the rules about 13,000 times: seconds on a shared machine, hence the timeout.
  test.skipIf(noPromtool)(
    "promtool accepts the rules and holds them to every promise",
    () => {
      const promtool = Bun.which("promtool");
      if (!promtool)
        throw new Error("Cannot check the rules: promtool is not on PATH (CI installs Debian's prometheus)");
      // The test files read rules.yaml beside them: the rendering for k8s/base's CronJob.
      const dir = mkdtempSync(join(tmpdir(), "image-refresh-rules-"));
      writeFileSync(join(dir, "rules.yaml"), baseRules(rulesText));
      const files = RULE_TESTS.map((t) => t.path.replace(/^.*\//, ""));
      for (const f of files) writeFileSync(join(dir, f), read(f));
      for (const args of [
        ["check", "rules", "rules.yaml"],
        ["test", "rules", ...files],
      ]) {
        const run = Bun.spawnSync([promtool, ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
        expect({ args, code: run.exitCode, out: `${run.stdout}${run.stderr}` }).toMatchObject({
          args,
          code: 0,
        });
      }
    },
    60_000,
  );
});

describe("exposition: the series the Collector's prometheus exporter hands to Prometheus", () => {
  test("the last push repeats every scrape, turns stale at metric_expiration, then is absent", () => {
    // Pushes at 0 and 5; scraped every minute until 70: 5x 1, 60x 2 (5..64), stale at 65, then gone.
    expect(
      exposed(
        [
          [5, 2],
          [0, 1],
        ],
        { every: 1, until: 70 },
      ),
    ).toBe("1x4 2x59 stale _x5");
  });

  test("a push after the series expired brings it back", () => {
    expect(
      exposed(
        [
          [0, 1],
          [3, 4],
        ],
        { every: 1, until: 4, expiry: 2 },
      ),
    ).toBe("1x1 stale 4x1");
  });

  test("nothing before the first push", () => {
    expect(exposed([[2, 7]], { every: 1, until: 3 })).toBe("_x2 7x1");
  });

  test("a delta counter accumulates, and restarts once its stream was stale past max_stale", () => {
    expect(counter([0, 5, 10, 100, 105])).toEqual([
      [0, 1],
      [5, 2],
      [10, 3],
      [100, 1],
      [105, 2],
    ]);
  });
});

describe("dashboard and collector config", () => {
  // A Jaeger search, as tests/real/pipeline/jaeger.test.ts sends it to a real Jaeger.
  test("the traces panel searches Jaeger for root spans by service, image and outcome", () => {
    const panel = dashboard.panels.find((p) => p.targets.some((t) => !t.expr));
    expect(panel?.targets).toEqual([
      expect.objectContaining({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, literally
        datasource: { type: "jaeger", uid: "${jaeger}" },
        queryType: "search",
        service: "$service",
        operation: ROOT_SPAN_NAME,
        tags: "image_refresh.image=$image image_refresh.outcome=$outcome",
      }),
    ]);
  });

  test("the dashboard's outcome choices are the closed set of outcomes", () => {
    const vars = (dashboard as unknown as { templating: { list: Array<{ name: string; query: string }> } })
      .templating.list;
    expect(vars.find((v) => v.name === "outcome")?.query.split(",")).toEqual(OUTCOMES);
  });

  const panelsOf = (metric: string) =>
    dashboard.panels.filter((p) => p.targets.some((t) => t.expr?.includes(metric)));

  test("per-image state is shown per image: a state timeline for each on/off gauge", () => {
    for (const metric of ["image_refresh_locked_out", "image_refresh_paused", "image_refresh_in_sync"]) {
      const panels = panelsOf(metric);
      expect({ metric, types: panels.map((p) => p.type) }).toEqual({ metric, types: ["state-timeline"] });
    }
  });

  test("every per-image series is grouped by image and installation wherever the dashboard reads it", () => {
    const perImage = [
      "image_refresh_locked_out",
      "image_refresh_paused",
      "image_refresh_in_sync",
      "image_refresh_unresolved_streak",
      "image_refresh_attempt_count",
      "image_refresh_last_verified_timestamp_seconds",
      "image_refresh_attempts_total",
      "image_refresh_reverts_total",
      "image_refresh_frozen",
      "image_refresh_skip_streak",
      "image_refresh_skips_total",
    ];
    for (const metric of perImage) {
      const targets = panelsOf(metric).flatMap((p) => p.targets.filter((t) => t.expr?.includes(metric)));
      expect({ metric, shown: targets.length > 0 }).toEqual({ metric, shown: true });
      for (const t of targets)
        expect(t.expr).toMatch(/by \(image_refresh_installation, image_refresh_image\)/);
    }
  });

  test("tick outcomes are shown per installation and outcome", () => {
    const targets = panelsOf("image_refresh_ticks_total").flatMap((p) => p.targets);
    expect(
      targets.some((t) => /by \(image_refresh_installation, image_refresh_outcome\)/.test(t.expr ?? "")),
    ).toBe(true);
  });

  // Grafana shows a broken query as an empty panel; promtool parses each as a recording rule.
  test.skipIf(noPromtool)("promtool parses every dashboard query", () => {
    const promtool = Bun.which("promtool");
    if (!promtool)
      throw new Error(
        "Cannot check the dashboard: promtool is not on PATH (CI installs Debian's prometheus)",
      );
    const records = dashboard.panels.flatMap((p, i) =>
      p.targets.filter((t) => t.expr).map((t, j) => ({ record: `dashboard:panel_${i}_${j}`, expr: t.expr })),
    );
    const file = join(mkdtempSync(join(tmpdir(), "image-refresh-dashboard-")), "dashboard.rules.yaml");
    writeFileSync(file, JSON.stringify({ groups: [{ name: "dashboard", rules: records }] }));
    const run = Bun.spawnSync([promtool, "check", "rules", file], { stdout: "pipe", stderr: "pipe" });
    expect({ code: run.exitCode, out: `${run.stdout}${run.stderr}` }).toMatchObject({ code: 0 });
  });

  const collector = Bun.YAML.parse(read("otel-collector.yaml")) as {
    processors: Record<string, { max_stale?: string }>;
    exporters: Record<string, { metric_expiration?: string }>;
    service: { pipelines: Record<string, { processors: string[]; exporters: string[] }> };
  };
  const minutes = (d: string | undefined) => {
    const m = d?.match(/^(\d+)([mh])$/);
    return Number(m?.[1]) * (m?.[2] === "h" ? 60 : 1);
  };

  test("delta_to_cumulative runs in the metrics pipeline with max_stale above the schedule", () => {
    const schedule = read("../base/cronjob.yaml").match(/schedule: "\*\/(\d+) \* \* \* \*"/);
    const scheduleMinutes = Number(schedule?.[1] ?? 60);
    expect(minutes(collector.processors.delta_to_cumulative?.max_stale)).toBeGreaterThan(scheduleMinutes);
    expect(collector.service.pipelines.metrics?.processors[0]).toBe("delta_to_cumulative");
    expect(collector.service.pipelines.metrics?.exporters).toContain("prometheus");
  });

  // The alert tests are built from these two figures; a config that differs would test other series.
  test("the rules' tests assume the collector's metric_expiration and max_stale", () => {
    expect(minutes(collector.exporters.prometheus?.metric_expiration)).toBe(METRIC_EXPIRATION_MINUTES);
    expect(minutes(collector.processors.delta_to_cumulative?.max_stale)).toBe(MAX_STALE_MINUTES);
  });

  // Renamed or deprecated in the Collector (v0.144 otlp -> otlp_grpc, otlphttp -> otlp_http;
  // v0.159 deltatocumulative -> delta_to_cumulative; logging -> debug; the prometheus exporter's
  // add_metric_suffixes -> translation_strategy, resource_to_telemetry_conversion ->
  // resource_constant_labels).
  test("the collector config uses no deprecated component or option names", () => {
    const type = (id: string) => id.split("/")[0];
    const deprecated = ["deltatocumulative", "logging", "otlp", "otlphttp"];
    const components = [...Object.keys(collector.processors), ...Object.keys(collector.exporters)];
    expect(components.filter((id) => deprecated.includes(type(id) as string))).toEqual([]);
    const text = read("otel-collector.yaml").replace(/#.*$/gm, "");
    expect(text).not.toMatch(/add_metric_suffixes|resource_to_telemetry_conversion/);
  });
});

describe("runbook: docs/on-call.md", () => {
  const runbook = readFileSync(join(DIR, "..", "..", "docs", "on-call.md"), "utf8");
  /** A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces to hyphens. */
  const slug = (h: string) =>
    h
      .toLowerCase()
      .replace(/[^a-z0-9 _-]/g, "")
      .replace(/ /g, "-");
  const anchors = new Set([...runbook.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] as string)));

  test("every alert's runbook_url is the runbook's base URL and an anchor of the runbook", () => {
    for (const a of alerts) {
      const url = a.annotations?.runbook_url ?? "";
      const [base, anchor] = url.split("#");
      expect({ alert: a.alert, base, anchor: anchors.has(anchor ?? "") }).toEqual({
        alert: a.alert,
        base: PLACEHOLDERS.runbook,
        anchor: true,
      });
    }
  });

  test("rendered, the base URL is the one asked for", () => {
    const rendered = parseRules(
      renderRules(rulesText, { ...BASE, runbook: "https://git.example/on-call.md" }),
    );
    for (const a of rendered)
      expect(a.annotations?.runbook_url).toBe(`https://git.example/on-call.md#${a.alert?.toLowerCase()}`);
  });

  test("one section per alert, none for an alert that does not exist; each says what it means, what to run, which outcome", () => {
    const alertsSection = runbook.slice(runbook.indexOf("\n## Alerts"));
    const sections = alertsSection.split(/^### /m).slice(1);
    const names = sections.map((s) => s.split("\n")[0]?.trim());
    expect(names.sort()).toEqual(alerts.map((a) => a.alert).sort());
    for (const s of sections) {
      const alert = s.split("\n")[0];
      const parts = {
        means: /\*\*Means\*\*: \S/.test(s),
        run: /\*\*Run\*\*: [\s\S]*`(image-refresh|kubectl) [^`]+`/.test(s),
        outcome: /\*\*Outcome\*\*: \S/.test(s),
      };
      expect({ alert, ...parts }).toEqual({ alert, means: true, run: true, outcome: true });
    }
  });

  test("the old runbook is gone: one runbook", () => {
    expect(existsSync(join(DIR, "RUNBOOK.md"))).toBe(false);
  });
});
