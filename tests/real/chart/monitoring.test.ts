// The chart's PrometheusRule under the real Helm v3 and v4: rendered for the release (its
// CronJob's name and namespace, its store) only when monitoring.prometheusRule.enabled is set and
// the cluster serves monitoring.coreos.com/v1, and the same rules install.ts renders from
// rules.yaml for that installation: one source for the chart, the kustomize path and Prometheus.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RULES_PATH } from "../../../k8s/monitoring/generate.ts";
import { renderPrometheusRule } from "../../../k8s/monitoring/install.ts";
import { type K8sObject, parseManifests } from "../../../lib/manifests.ts";
import { CHART, HELMS, type HelmModule, helm, KUBE_VERSION, needHelm } from "./helm.ts";

const missing = needHelm("tests/real/chart/monitoring.test.ts");
const source = readFileSync(RULES_PATH, "utf8");

function render(
  mod: HelmModule,
  opts: { release: string; namespace: string; values: unknown; api: boolean },
): K8sObject[] {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-values-"));
  try {
    writeFileSync(join(dir, "values.json"), JSON.stringify(opts.values));
    const args = ["template", opts.release, CHART, "-n", opts.namespace, "--kube-version", KUBE_VERSION];
    if (opts.api) args.push("--api-versions", "monitoring.coreos.com/v1");
    const r = helm(mod, [...args, "-f", join(dir, "values.json")]);
    if (r.code !== 0) throw new Error(`helm template (${mod}) failed: ${r.stderr}`);
    return parseManifests(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const on = { monitoring: { prometheusRule: { enabled: true, labels: { release: "kps" } } } };
const rulesOf = (objects: K8sObject[]) => objects.filter((o) => o.kind === "PrometheusRule");

describe.skipIf(missing)("the chart's PrometheusRule", () => {
  for (const mod of HELMS) {
    test(`${mod}: release refresher in platform gets rules for CronJob refresher-image-refresh and its store`, () => {
      const objects = render(mod, { release: "refresher", namespace: "platform", values: on, api: true });
      const cron = objects.find((o) => o.kind === "CronJob");
      expect(cron?.metadata).toMatchObject({ name: "refresher-image-refresh", namespace: "platform" });
      const [rule, ...more] = rulesOf(objects);
      expect(more).toEqual([]);
      expect(rule?.metadata).toMatchObject({
        name: "refresher-image-refresh",
        namespace: "platform",
        labels: { release: "kps", "app.kubernetes.io/instance": "refresher" },
      });
      const [want] = parseManifests(
        renderPrometheusRule(source, {
          namespace: "platform",
          cronjob: "refresher-image-refresh",
          installation: "platform/image-refresh-state",
          runbook: "docs/on-call.md",
        }),
      );
      expect((rule as unknown as { spec: unknown }).spec).toEqual(
        (want as unknown as { spec: unknown }).spec,
      );
    });

    test(`${mod}: another release, another namespace, a store named in the config and a runbook URL`, () => {
      const values = {
        ...on,
        monitoring: {
          ...on.monitoring,
          runbookUrl: "https://git.example/acme/image-refresh/docs/on-call.md",
        },
        config: { store: { namespace: "state", name: "refresh-book" } },
      };
      const [rule] = rulesOf(render(mod, { release: "image-refresh", namespace: "ops", values, api: true }));
      const [want] = parseManifests(
        renderPrometheusRule(source, {
          namespace: "ops",
          cronjob: "image-refresh",
          installation: "state/refresh-book",
          runbook: "https://git.example/acme/image-refresh/docs/on-call.md",
        }),
      );
      expect((rule as unknown as { spec: unknown }).spec).toEqual(
        (want as unknown as { spec: unknown }).spec,
      );
    });

    test(`${mod}: nothing without monitoring.coreos.com/v1, nothing unless enabled`, () => {
      const base = { release: "refresher", namespace: "platform" };
      expect(rulesOf(render(mod, { ...base, values: on, api: false }))).toEqual([]);
      expect(rulesOf(render(mod, { ...base, values: {}, api: true }))).toEqual([]);
    });
  }
});
