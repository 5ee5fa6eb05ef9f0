// Writes the Helm chart's PrometheusRule template from rules.yaml (install.ts), so the alerts are
// edited in one place, the chart's copy of dashboard.json, and the promtool test files from promises.ts, for rules.yaml rendered for
// k8s/base's CronJob (BASE). Run: npx bun k8s/monitoring/generate.ts
// tests/telemetry/monitoring.test.ts fails while a written file differs from what this writes.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { capturedCase, readCaptured } from "./captured.ts";
import { chartTemplate, DEFAULT_RUNBOOK, type Install, renderRules } from "./install.ts";
import { DAYS, MINUTES } from "./promises.ts";
import type { Case, Labels } from "./series.ts";

export interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Labels;
  annotations?: Labels;
}

export function parseRules(rulesYaml: string): Rule[] {
  const doc = Bun.YAML.parse(rulesYaml) as { groups: Array<{ rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

/** promtool expands the templates; the expectation is the same text with the labels filled in. */
function expand(template: string, labels: Labels): string {
  return template.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, k: string) => labels[k] ?? "");
}

export function expected(rule: Rule, firing: Labels) {
  const labels = { ...firing, ...rule.labels };
  const annotations = Object.entries(rule.annotations ?? {}).map(([k, v]) => [k, expand(v, labels)]);
  return { exp_labels: labels, exp_annotations: Object.fromEntries(annotations) };
}

function testGroup(c: Case, rules: Rule[]) {
  const alert_rule_test = c.expect.map((e) => {
    const rule = rules.find((r) => r.alert === e.alert);
    if (!rule) throw new Error(`Cannot test ${e.alert} in "${c.name}": rules.yaml has no such alert`);
    return { eval_time: `${e.at}m`, alertname: e.alert, exp_alerts: e.firing.map((f) => expected(rule, f)) };
  });
  return { name: c.name, interval: `${c.scrape.every}m`, input_series: c.series, alert_rule_test };
}

/** Series selectors as the repository's YAML formatter (biome) writes them: '...' without escapes. */
function singleQuoted(_: string, inner: string): string {
  return inner.includes("'") ? `"${inner}"` : `'${inner.replaceAll('\\"', '"')}'`;
}

export function toRuleTests(cases: Case[], evaluationInterval: string, rulesYaml: string): string {
  const rules = parseRules(rulesYaml);
  const doc = {
    rule_files: ["rules.yaml"],
    evaluation_interval: evaluationInterval,
    tests: cases.map((c) => testGroup(c, rules)),
  };
  const yaml = Bun.YAML.stringify(doc, null, 2).replace(
    /"((?:[^"\\]|\\")*\\"(?:[^"\\]|\\")*)"/g,
    singleQuoted,
  );
  return `# Generated from promises.ts by generate.ts for rules.yaml rendered for k8s/base (BASE);\n# tests/telemetry/monitoring.test.ts runs promtool test rules on it beside that rendering.\n${yaml}\n`;
}

export const RULES_PATH = join(import.meta.dir, "rules.yaml");
export const CHART_TEMPLATE_PATH = join(
  import.meta.dir,
  "..",
  "..",
  "charts",
  "image-refresh",
  "templates",
  "prometheusrule.yaml",
);
/** k8s/base's CronJob and store, watching every installation: what the promtool tests and the pipeline read. */
export const BASE: Install = {
  namespace: "image-refresh",
  cronjob: "image-refresh",
  installation: "image-refresh/image-refresh-state",
  everyInstallation: true,
  runbook: DEFAULT_RUNBOOK,
};
export const baseRules = (source = readFileSync(RULES_PATH, "utf8")) => renderRules(source, BASE);
/** Each test file with its evaluation interval and cases. */
export const RULE_TESTS = [
  { path: join(import.meta.dir, "rules.test.yaml"), every: "1m", cases: MINUTES },
  { path: join(import.meta.dir, "rules.days.test.yaml"), every: "10m", cases: DAYS },
  // Input captured from the real pipeline (tests/real/pipeline/capture.ts writes captured.json).
  {
    path: join(import.meta.dir, "rules.captured.test.yaml"),
    every: "1m",
    cases: [capturedCase(readCaptured())],
  },
];

/** Helm reads no file outside the chart: the chart ships a copy of dashboard.json for its ConfigMap. */
export const DASHBOARD_PATH = join(import.meta.dir, "dashboard.json");
export const CHART_DASHBOARD_PATH = join(CHART_TEMPLATE_PATH, "..", "..", "dashboards", "overview.json");

if (import.meta.main) {
  const source = readFileSync(RULES_PATH, "utf8");
  writeFileSync(CHART_TEMPLATE_PATH, chartTemplate(source));
  mkdirSync(join(CHART_DASHBOARD_PATH, ".."), { recursive: true });
  copyFileSync(DASHBOARD_PATH, CHART_DASHBOARD_PATH);
  for (const t of RULE_TESTS) writeFileSync(t.path, toRuleTests(t.cases, t.every, baseRules(source)));
  process.stdout.write(
    `wrote ${[CHART_TEMPLATE_PATH, CHART_DASHBOARD_PATH, ...RULE_TESTS.map((t) => t.path)].join(", ")}\n`,
  );
}
