// Writes prometheusrule.yaml (Prometheus Operator) from rules.yaml (plain, what promtool reads),
// so the alerts are edited in one place, and the promtool test files from promises.ts.
// Run: npx bun k8s/monitoring/generate.ts
// The groups are copied as text, comments included, under `spec:`; the test checks both parse
// to the same groups, and that the test files are the ones promises.ts writes.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { capturedCase, readCaptured } from "./captured.ts";
import { DAYS, MINUTES } from "./promises.ts";
import type { Case, Labels } from "./series.ts";

const HEADER = `# Generated from rules.yaml by generate.ts; edit rules.yaml and regenerate.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: image-refresh
  namespace: image-refresh
  labels:
    app.kubernetes.io/name: image-refresh
    app.kubernetes.io/component: monitoring
spec:
`;

export function toPrometheusRule(rulesYaml: string): string {
  const at = rulesYaml.search(/^groups:/m);
  if (at < 0) throw new Error("Cannot wrap rules.yaml: no top-level groups: key");
  const body = rulesYaml
    .slice(at)
    .split("\n")
    .map((line) => (line === "" ? line : `  ${line}`))
    .join("\n");
  return HEADER + body;
}

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

function expected(rule: Rule, firing: Labels) {
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
  return `# Generated from promises.ts by generate.ts; run: promtool test rules <this file>\n${yaml}\n`;
}

export const RULES_PATH = join(import.meta.dir, "rules.yaml");
export const PROMETHEUS_RULE_PATH = join(import.meta.dir, "prometheusrule.yaml");
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

if (import.meta.main) {
  const rules = readFileSync(RULES_PATH, "utf8");
  writeFileSync(PROMETHEUS_RULE_PATH, toPrometheusRule(rules));
  for (const t of RULE_TESTS) writeFileSync(t.path, toRuleTests(t.cases, t.every, rules));
  process.stdout.write(`wrote ${[PROMETHEUS_RULE_PATH, ...RULE_TESTS.map((t) => t.path)].join(", ")}\n`);
}
