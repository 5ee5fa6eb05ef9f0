// Writes prometheusrule.yaml (Prometheus Operator) from rules.yaml (plain, what promtool reads),
// so the alerts are edited in one place. Run: npx bun k8s/monitoring/generate.ts
// The groups are copied as text, comments included, under `spec:`; the test checks both parse
// to the same groups.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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

export const RULES_PATH = join(import.meta.dir, "rules.yaml");
export const PROMETHEUS_RULE_PATH = join(import.meta.dir, "prometheusrule.yaml");

if (import.meta.main) {
  writeFileSync(PROMETHEUS_RULE_PATH, toPrometheusRule(readFileSync(RULES_PATH, "utf8")));
  process.stdout.write(`wrote ${PROMETHEUS_RULE_PATH}\n`);
}
