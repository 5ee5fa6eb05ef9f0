// The chart's PrometheusRule under the real Helm v3 and v4: rendered for the release (its
// CronJob's name and namespace, its store) only when monitoring.prometheusRule.enabled is set and
// the cluster serves monitoring.coreos.com/v1, and the same rules install.ts renders from
// rules.yaml for that installation: one source for the chart, the kustomize path and Prometheus.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DASHBOARD_PATH, RULES_PATH } from "../../../k8s/monitoring/generate.ts";
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

// monitoring.enabled is the one switch; a part's own enabled, when set, overrides it for that part.
describe.skipIf(missing)("monitoring.enabled, the dashboards and the resource attributes", () => {
  const base = { release: "refresher", namespace: "platform", api: true };
  const kinds = (values: unknown) =>
    render("helm3", { ...base, values })
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .filter((k) => /Prometheus|dashboard/.test(k));
  const rule = "PrometheusRule/refresher-image-refresh";
  const board = "ConfigMap/refresher-image-refresh-dashboard-overview";

  test("one value turns both on; each part's own enabled overrides it either way", () => {
    expect(kinds({})).toEqual([]);
    expect(kinds({ monitoring: { enabled: true } }).sort()).toEqual([board, rule]);
    expect(kinds({ monitoring: { enabled: true, prometheusRule: { enabled: false } } })).toEqual([board]);
    expect(kinds({ monitoring: { enabled: true, dashboards: { enabled: false } } })).toEqual([rule]);
    expect(kinds({ monitoring: { prometheusRule: { enabled: true } } })).toEqual([rule]);
    expect(kinds({ monitoring: { dashboards: { enabled: true } } })).toEqual([board]);
  });

  for (const mod of HELMS)
    test(`${mod}: the dashboard ConfigMap carries the sidecar's label and dashboard.json as it is`, () => {
      const values = {
        monitoring: {
          enabled: true,
          dashboards: {
            label: "team_dashboard",
            labelValue: "yes",
            namespace: "grafana",
            annotations: { grafana_folder: "Platform" },
          },
        },
      };
      const cm = render(mod, { ...base, values, api: false }).find(
        (o) => o.kind === "ConfigMap" && o.metadata.name.endsWith("-dashboard-overview"),
      );
      expect(cm?.metadata).toMatchObject({
        namespace: "grafana",
        labels: { team_dashboard: "yes" },
        annotations: { grafana_folder: "Platform" },
      });
      const data = (cm as unknown as { data: Record<string, string> }).data;
      expect(JSON.parse(data["overview.json"] as string)).toEqual(
        JSON.parse(readFileSync(DASHBOARD_PATH, "utf8")),
      );
      const dflt = render(mod, { ...base, values: { monitoring: { enabled: true } }, api: false });
      expect(dflt.find((o) => o.metadata.name.endsWith("-dashboard-overview"))?.metadata).toMatchObject({
        namespace: "platform",
        labels: { grafana_dashboard: "1" },
      });
    });

  test("telemetry.cluster and resourceAttributes end up percent-encoded in OTEL_RESOURCE_ATTRIBUTES, cluster first", () => {
    const env = (telemetry: unknown) => {
      const cron = render("helm3", { ...base, values: { telemetry } }).find(
        (o) => o.kind === "CronJob",
      ) as unknown as {
        spec: {
          jobTemplate: {
            spec: {
              template: { spec: { containers: Array<{ env: Array<{ name: string; value: string }> }> } };
            };
          };
        };
      };
      return cron.spec.jobTemplate.spec.template.spec.containers[0]?.env.find(
        (e) => e.name === "OTEL_RESOURCE_ATTRIBUTES",
      )?.value;
    };
    expect(env({})).toBe("");
    expect(env({ cluster: "prod-eu" })).toBe("cluster=prod-eu");
    expect(
      env({
        cluster: "prod eu,1",
        resourceAttributes: { "z.a": "x=y", "deployment.environment.name": "prod" },
      }),
    ).toBe("cluster=prod%20eu%2C1,deployment.environment.name=prod,z.a=x%3Dy");
  });
});
