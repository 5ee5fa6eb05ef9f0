// NOTES.txt, what `helm install` prints: the next steps for this release (status as a one-off Job
// or locally, the pull secret, monitoring on or off), with the release's own names. `helm template`
// does not render NOTES.txt, so the test renders it through `tpl` in a copy of the chart (under
// Helm v3 and v4, with or without the Operator's API) and checks once that Helm v4's own
// `install --dry-run=client` prints the same text.
import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseManifests } from "../../../lib/manifests.ts";
import { CHART, HELMS, type HelmModule, helm, KUBE_VERSION, needHelm } from "./helm.ts";

const missing = needHelm("tests/real/chart/notes.test.ts");

function withChartCopy<T>(values: unknown, run: (chart: string, valuesFile: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-notes-"));
  try {
    const chart = join(dir, "image-refresh");
    cpSync(CHART, chart, { recursive: true });
    writeFileSync(join(chart, "notes.txt"), readFileSync(join(CHART, "templates", "NOTES.txt")));
    writeFileSync(
      join(chart, "templates", "zz-notes.yaml"),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: notes }\ndata:\n  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n',
    );
    writeFileSync(join(dir, "values.json"), JSON.stringify(values));
    return run(chart, join(dir, "values.json"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function notes(mod: HelmModule, values: unknown, api: boolean): string {
  return withChartCopy(values, (chart, file) => {
    const args = [
      "template",
      "refresher",
      chart,
      "-n",
      "platform",
      "--kube-version",
      KUBE_VERSION,
      "-f",
      file,
    ];
    if (api) args.push("--api-versions", "monitoring.coreos.com/v1");
    const r = helm(mod, args);
    if (r.code !== 0) throw new Error(`helm template (${mod}) failed: ${r.stderr}`);
    const cm = parseManifests(r.stdout).find((o) => o.metadata.name === "notes");
    return (cm as unknown as { data: { notes: string } }).data.notes;
  });
}

const READY = {
  image: { repository: "ghcr.io/acme/image-refresh", tag: "0.1.0" },
  telemetry: { otlpEndpoint: "http://otel-collector.monitoring:4318" },
  monitoring: { enabled: true },
  config: { registry: { dockerConfigJson: "/etc/image-refresh/pull-secret/.dockerconfigjson" } },
};

describe.skipIf(missing)("NOTES.txt", () => {
  for (const mod of HELMS) {
    test(`${mod}: the defaults: status as a Job and locally, anonymous registry, monitoring off, the unset image`, () => {
      const text = notes(mod, {}, false);
      for (const line of [
        'CronJob platform/refresher-image-refresh ticks on "*/5 * * * *"',
        "store ConfigMap platform/image-refresh-state",
        'WARNING: image.tag is still "set-me"',
        "kubectl -n platform create job refresher-image-refresh-status-$(date +%s) --from=cronjob/refresher-image-refresh",
        '"value":["status"]',
        "kubectl -n platform get configmap refresher-image-refresh-config -o jsonpath='{.data.config\\.yaml}' > config.yaml",
        "image-refresh status --config config.yaml",
        "The config does not read it (config.registry.dockerConfigJson is not set)",
        "kubectl -n platform create secret docker-registry image-refresh-pull-secret",
        "telemetry: OFF",
        "alerts: OFF (monitoring.enabled=true turns them on)",
        "dashboard: OFF",
        'docs/install-helm.md "Uninstall"',
      ])
        expect({ line, found: text.includes(line) }).toEqual({ line, found: true });
    });

    test(`${mod}: ready to run, monitoring on, with and without the Operator's API`, () => {
      const text = notes(mod, READY, true);
      expect(text).not.toContain("WARNING");
      expect(text).toContain("The config reads it (/etc/image-refresh/pull-secret/.dockerconfigjson)");
      expect(text).toContain("telemetry: ON, every tick exports to http://otel-collector.monitoring:4318");
      expect(text).toContain("alerts: ON, PrometheusRule platform/refresher-image-refresh for this release");
      expect(text).toContain("dashboard: ON, ConfigMap refresher-image-refresh-dashboard-overview");
      expect(notes(mod, READY, false)).toContain(
        "alerts: NOT RENDERED: this cluster does not serve monitoring.coreos.com/v1",
      );
    });
  }

  // tests/k8s/jobs.test.ts runs docs/on-call.md's pipeline with the real kubectl: the notes give
  // that very pipeline, with this release's names and `status` for its args.
  test("the status Job is docs/on-call.md's tested pipeline with the release's names", () => {
    const doc = readFileSync(join(CHART, "..", "..", "docs", "on-call.md"), "utf8");
    const start = doc.indexOf('kubectl -n "$NS" create job "$CRONJOB-rearm-');
    const pipeline = doc.slice(start, doc.indexOf("\n", doc.indexOf("| kubectl -n", start)));
    const want = pipeline
      .replace('"$CRONJOB-rearm-$(date +%s)"', "refresher-image-refresh-status-$(date +%s)")
      .replaceAll('"$CRONJOB"', "refresher-image-refresh")
      .replaceAll('"$NS"', "platform")
      .replace('["rearm"]', '["status"]');
    const squash = (t: string) => t.replace(/\s+/g, " ").trim();
    expect(start).toBeGreaterThan(0);
    expect(squash(notes("helm3", {}, false))).toContain(squash(want));
  });

  test("helm4 install --dry-run=client prints the same notes", () => {
    const printed = withChartCopy(READY, (chart, file) => {
      const r = helm("helm4", [
        "install",
        "refresher",
        chart,
        "-n",
        "platform",
        "--dry-run=client",
        "-f",
        file,
      ]);
      expect({ code: r.code, err: r.stderr }).toEqual({ code: 0, err: "" });
      return r.stdout.slice(r.stdout.indexOf("NOTES:\n") + "NOTES:\n".length);
    });
    expect(printed.trim()).toBe(notes("helm4", READY, false).trim());
  });
});
