// `--set monitoring.enabled=true` under several release names and namespaces: the real Helm v3 and
// v4 render the same PrometheusRule, and promtool, fed every case of promises.ts twice (once
// labelled as this release's CronJob, Jobs and store, once as another release's beside it), fires
// each alert for this release exactly as the cases promise and never for the other one. Every alert
// of the rendered rules fires in at least one case, so no rule escapes the comparison.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expected, type Rule } from "../../../k8s/monitoring/generate.ts";
import { DAYS, MINUTES } from "../../../k8s/monitoring/promises.ts";
import type { Case, Labels, Series } from "../../../k8s/monitoring/series.ts";
import { type K8sObject, parseManifests } from "../../../lib/manifests.ts";
import { needTool } from "../../support/tools.ts";
import { CHART, HELMS, helm, KUBE_VERSION, needHelm } from "./helm.ts";

const missing = needHelm("tests/real/chart/monitoring-releases.test.ts");
const noPromtool = needTool("promtool", { apt: "prometheus" });

/** The names one release's series carry: its CronJob's namespace and name, its store. */
interface Names {
  namespace: string;
  cronjob: string;
  installation: string;
}

interface Release extends Names {
  release: string;
  values: Record<string, unknown>;
  /** Another release's names, whose series sit beside this one's. */
  other: Names;
}

const RELEASES: Release[] = [
  {
    release: "refresher",
    namespace: "platform",
    values: {},
    cronjob: "refresher-image-refresh",
    installation: "platform/image-refresh-state",
    other: {
      namespace: "image-refresh",
      cronjob: "image-refresh",
      installation: "image-refresh/image-refresh-state",
    },
  },
  {
    // Named image-refresh, in another namespace, its store named in the config.
    release: "image-refresh",
    namespace: "ops",
    values: { config: { store: { namespace: "state", name: "refresh-book" } } },
    cronjob: "image-refresh",
    installation: "state/refresh-book",
    other: {
      namespace: "platform",
      cronjob: "refresher-image-refresh",
      installation: "platform/image-refresh-state",
    },
  },
  {
    // A dot in the name: the other release's Jobs match `fleet.eu-image-refresh-.+` unless it is escaped.
    release: "fleet.eu",
    namespace: "image-refresh",
    values: {},
    cronjob: "fleet.eu-image-refresh",
    installation: "image-refresh/image-refresh-state",
    other: {
      namespace: "image-refresh",
      cronjob: "fleetxeu-image-refresh",
      installation: "image-refresh/fleetxeu",
    },
  },
];

/** The chart's PrometheusRule for a release, rendered the way the issue's operator does it. */
function renderRule(mod: (typeof HELMS)[number], r: Release): { groups: Array<{ rules: Rule[] }> } {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-values-"));
  try {
    writeFileSync(join(dir, "values.json"), JSON.stringify(r.values));
    const run = helm(mod, [
      "template",
      r.release,
      CHART,
      "-n",
      r.namespace,
      "--kube-version",
      KUBE_VERSION,
      "--api-versions",
      "monitoring.coreos.com/v1",
      "--set",
      "monitoring.enabled=true",
      "-f",
      join(dir, "values.json"),
    ]);
    if (run.code !== 0) throw new Error(`helm template (${mod}) failed: ${run.stderr}`);
    const rules = parseManifests(run.stdout).filter((o: K8sObject) => o.kind === "PrometheusRule");
    expect(rules.map((o) => o.metadata)).toMatchObject([{ name: r.cronjob, namespace: r.namespace }]);
    return (rules[0] as unknown as { spec: { groups: Array<{ rules: Rule[] }> } }).spec;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// promises.ts labels its CronJob as k8s/base's (namespace image-refresh, CronJob image-refresh).
const BASE_NAMESPACE = "image-refresh";
const BASE_CRONJOB = "image-refresh";

/** Labels of the cases' installation `from` (and of k8s/base's CronJob) moved to `to`. */
function relabel(labels: Labels, from: string | undefined, to: Names): Labels {
  const out: Labels = { ...labels };
  if (from && out.image_refresh_installation === from) out.image_refresh_installation = to.installation;
  if (from && out.exported_instance === from) out.exported_instance = to.installation;
  if (out.namespace === BASE_NAMESPACE) out.namespace = to.namespace;
  if (out.cronjob === BASE_CRONJOB) out.cronjob = to.cronjob;
  if (out.job_name?.startsWith(`${BASE_CRONJOB}-`))
    out.job_name = `${to.cronjob}-${out.job_name.slice(BASE_CRONJOB.length + 1)}`;
  return out;
}

function parseSeries(s: string): { name: string; labels: Labels } {
  const [, name = "", inner = ""] = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$/.exec(s) ?? [];
  const labels = Object.fromEntries([...inner.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  return { name, labels };
}

const series = (name: string, labels: Labels, values: string): Series => ({
  series: `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(", ")}}`,
  values,
});

/**
 * One promtool test per case and installation of the case: that installation's series (and the
 * CronJob's) as this release's and again as the other's. A case written for several installations
 * is split, the others' series dropped; an absent() alert's promise spans installations, so it is
 * only compared in cases of one.
 */
function testsFor(c: Case, r: Release, rules: Rule[]) {
  const parsed = c.series.map((s) => ({ ...parseSeries(s.series), values: s.values }));
  const stores = [...new Set(parsed.map((s) => s.labels.image_refresh_installation).filter(Boolean))];
  const absent = new Set(rules.filter((x) => /^\s*absent\(/.test(x.expr)).map((x) => x.alert));
  return (stores.length ? stores : [undefined]).map((store) => {
    const own = parsed.filter(
      (s) => !s.labels.image_refresh_installation || s.labels.image_refresh_installation === store,
    );
    const input_series = [r as Names, r.other].flatMap((to) =>
      own.map((s) => series(s.name, relabel(s.labels, store, to), s.values)),
    );
    const alert_rule_test = c.expect
      .filter((e) => stores.length <= 1 || !absent.has(e.alert))
      .map((e) => {
        const rule = rules.find((x) => x.alert === e.alert);
        if (!rule) throw new Error(`the rendered rules have no ${e.alert}`);
        const firing = e.firing
          .filter((f) => !f.image_refresh_installation || f.image_refresh_installation === store)
          .map((f) =>
            relabel(absent.has(e.alert) ? { ...f, image_refresh_installation: r.installation } : f, store, r),
          );
        return {
          eval_time: `${e.at}m`,
          alertname: e.alert,
          exp_alerts: firing.map((f) => expected(rule, f)),
        };
      });
    return {
      name: `${c.name} [${store ?? "no store"}]`,
      interval: `${c.scrape.every}m`,
      input_series,
      alert_rule_test,
    };
  });
}

function promtool(dir: string, args: string[]) {
  const run = Bun.spawnSync([Bun.which("promtool") as string, ...args], {
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { args, code: run.exitCode, out: `${run.stdout}${run.stderr}`.slice(0, 4000) };
}

describe.skipIf(missing || noPromtool)(
  "monitoring.enabled=true: each release's rules fire for it and not for another",
  () => {
    for (const r of RELEASES)
      test(`release ${r.release} in ${r.namespace} (beside ${r.other.namespace}/${r.other.cronjob})`, () => {
        const [spec, ...others] = HELMS.map((mod) => renderRule(mod, r));
        for (const o of others) expect(o).toEqual(spec as never);
        const rules = spec?.groups.flatMap((g) => g.rules) ?? [];
        const dir = mkdtempSync(join(tmpdir(), "image-refresh-releases-"));
        try {
          writeFileSync(join(dir, "rules.yaml"), JSON.stringify(spec));
          const fired = new Set<string>();
          for (const [file, every, cases] of [
            ["minutes.yaml", "1m", MINUTES],
            ["days.yaml", "10m", DAYS],
          ] as const) {
            const tests = cases.flatMap((c) => testsFor(c, r, rules));
            for (const t of tests)
              for (const a of t.alert_rule_test) if (a.exp_alerts.length) fired.add(a.alertname);
            writeFileSync(
              join(dir, file),
              JSON.stringify({ rule_files: ["rules.yaml"], evaluation_interval: every, tests }),
            );
            expect(promtool(dir, ["test", "rules", file])).toMatchObject({ code: 0 });
          }
          expect(promtool(dir, ["check", "rules", "rules.yaml"])).toMatchObject({ code: 0 });
          expect([...fired].sort()).toEqual(rules.map((x) => x.alert as string).sort());
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }, 120_000);
  },
);
