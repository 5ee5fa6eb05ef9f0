// The alerts follow the installation: rules.yaml names no CronJob, namespace or store; rendered for
// one (install.ts: the chart's template, render.ts for a kustomize overlay, plain Prometheus) every
// kube-state-metrics selector names that CronJob's namespace and name and every selector of the
// product's series that store, and promtool, on series of two installations side by side, fires
// each alert for the rendered one and for nothing else.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { CHART_TEMPLATE_PATH, expected, parseRules, RULES_PATH } from "../../k8s/monitoring/generate.ts";
import { type Install, renderPrometheusRule, renderRules } from "../../k8s/monitoring/install.ts";
import { installOf } from "../../k8s/monitoring/render.ts";
import { parseManifests } from "../../lib/manifests.ts";
import { needTool } from "../support/tools.ts";

const noPromtool = needTool("promtool", { apt: "prometheus" });
const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });
const source = readFileSync(RULES_PATH, "utf8");
const ROOT = join(import.meta.dir, "..", "..");

const PLATFORM: Install = {
  namespace: "platform",
  cronjob: "refresher-image-refresh",
  installation: "platform/image-refresh-state",
  runbook: "https://example.test/docs/on-call.md",
};

/** Every `name{...}` selector of a series in the rules' expressions. */
const selectors = (rulesText: string, prefix: string) =>
  parseRules(rulesText).flatMap((r) =>
    [...r.expr.matchAll(new RegExp(`\\b(${prefix}[a-z0-9_]+)(\\{[^}]*\\})?`, "g"))]
      .filter((m) => !/^image_refresh_(image|installation|outcome)$/.test(m[1] as string))
      .map((m) => ({ alert: r.alert, series: m[1], matchers: m[2] ?? "" })),
  );

describe("the rules name no installation of their own", () => {
  for (const [what, path] of [
    ["rules.yaml", RULES_PATH],
    ["the chart's template", CHART_TEMPLATE_PATH],
  ] as const)
    test(`${what} hard-codes no namespace, CronJob or Job name`, () => {
      const text = readFileSync(path, "utf8");
      expect(text).not.toMatch(/namespace="image-refresh"|cronjob="image-refresh"|job_name=~"image-refresh-/);
    });
});

describe("rendered for one installation", () => {
  const rendered = renderRules(source, PLATFORM);

  test("every kube-state-metrics selector names its CronJob (or its Jobs) in its namespace", () => {
    const ksm = selectors(rendered, "kube_");
    expect(ksm.length).toBeGreaterThan(5);
    const names =
      /^\{namespace="platform", (cronjob="refresher-image-refresh"|job_name=~"refresher-image-refresh-\.\+")\}$/;
    for (const s of ksm) expect({ ...s, ok: names.test(s.matchers) }).toMatchObject({ ok: true });
  });

  test("every selector of the product's series names its store, and the text keeps no placeholder", () => {
    const own = selectors(rendered, "image_refresh_");
    expect(own.length).toBeGreaterThan(15);
    for (const s of own)
      expect(s).toMatchObject({ matchers: '{image_refresh_installation="platform/image-refresh-state"}' });
    expect(rendered).not.toMatch(/\$\{[A-Z_]+\}/);
  });

  test("a name with a dot is matched literally in the Jobs' regular expression", () => {
    expect(renderRules(source, { ...PLATFORM, cronjob: "a.b" })).toContain('job_name=~"a\\\\.b-.+"');
  });

  test("as a PrometheusRule: named after the CronJob, in its namespace, the same groups", () => {
    const [cr] = parseManifests(renderPrometheusRule(source, PLATFORM));
    expect(cr?.metadata).toMatchObject({ name: "refresher-image-refresh", namespace: "platform" });
    expect((cr as unknown as { spec: unknown }).spec).toEqual(Bun.YAML.parse(rendered));
  });

  // Series of the rendered installation and of another, side by side: each alert fires for the
  // rendered one only. The other is k8s/base's CronJob, with a store of its own.
  test.skipIf(noPromtool)("promtool: each alert fires for this installation and not for another", () => {
    const dir = mkdtempSync(join(tmpdir(), "image-refresh-install-"));
    try {
      writeFileSync(join(dir, "rules.yaml"), rendered);
      writeFileSync(join(dir, "test.yaml"), JSON.stringify(sideBySide()));
      const promtool = Bun.which("promtool") as string;
      for (const args of [
        ["check", "rules", "rules.yaml"],
        ["test", "rules", "test.yaml"],
      ]) {
        const run = Bun.spawnSync([promtool, ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
        expect({ args, code: run.exitCode, out: `${run.stdout}${run.stderr}` }).toMatchObject({ code: 0 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A promtool test: a lockout and a failed Job in both installations; LockedOut and TickFailed fire once. */
function sideBySide() {
  const rules = parseRules(renderRules(source, PLATFORM));
  const firing = (alert: string, labels: Record<string, string>) => {
    const rule = rules.find((r) => r.alert === alert);
    if (!rule) throw new Error(`rules.yaml has no ${alert}`);
    return { eval_time: "5m", alertname: alert, exp_alerts: [expected(rule, labels)] };
  };
  const own = (installation: string) => ({
    image_refresh_installation: installation,
    image_refresh_image: "api",
    container_image_name: "myorg/api",
  });
  const series = (name: string, labels: Record<string, string>, values: string) => ({
    series: `${name}{${Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(",")}}`,
    values,
  });
  const job = (namespace: string, name: string) => ({ namespace, job_name: name, job: "kube-state-metrics" });
  const mine = job("platform", "refresher-image-refresh-29000000");
  const other = job("image-refresh", "image-refresh-29000000");
  return {
    rule_files: ["rules.yaml"],
    evaluation_interval: "1m",
    tests: [
      {
        interval: "1m",
        input_series: [
          series("image_refresh_locked_out", own("platform/image-refresh-state"), "1x10"),
          series("image_refresh_locked_out", own("image-refresh/image-refresh-state"), "1x10"),
          series("kube_job_status_failed", { ...mine, reason: "BackoffLimitExceeded" }, "1x10"),
          series("kube_job_status_failed", { ...other, reason: "BackoffLimitExceeded" }, "1x10"),
          // Started at time 0 (seconds since the epoch): within the last hour at 5m.
          series("kube_job_status_start_time", mine, "0x10"),
          series("kube_job_status_start_time", other, "0x10"),
        ],
        alert_rule_test: [
          firing("ImageRefreshLockedOut", own("platform/image-refresh-state")),
          firing("ImageRefreshTickFailed", { ...mine, reason: "BackoffLimitExceeded" }),
        ],
      },
    ],
  };
}

describe.skipIf(noKubectl)("the kustomize path: render.ts reads the overlay's CronJob and store", () => {
  test("an overlay that moves and renames the example gets rules for its own CronJob", () => {
    const dir = mkdtempSync(join(tmpdir(), "image-refresh-overlay-"));
    try {
      const example = relative(dir, join(ROOT, "k8s", "examples", "two-deployments-and-daemonset"));
      writeFileSync(
        join(dir, "kustomization.yaml"),
        // Only the CronJob moves: the Roles stay in the targets' namespaces.
        `namePrefix: refresher-\nresources:\n  - ${example}\npatches:\n  - target: { kind: CronJob }\n    patch: '[{"op": "replace", "path": "/metadata/namespace", "value": "platform"}]'\n`,
      );
      const run = Bun.spawnSync(["kubectl", "kustomize", dir], { stdout: "pipe", stderr: "pipe" });
      expect(run.exitCode).toBe(0);
      // The example's config names its store's namespace; the CronJob moved and was renamed.
      expect(installOf(parseManifests(run.stdout.toString()))).toEqual({
        namespace: "platform",
        cronjob: "refresher-image-refresh",
        installation: "image-refresh/image-refresh-state",
        runbook: "docs/on-call.md",
      });
      const cli = Bun.spawnSync(["bun", join(ROOT, "k8s", "monitoring", "render.ts"), "--overlay", dir], {
        stdout: "pipe",
        stderr: "pipe",
      });
      expect({ code: cli.exitCode, err: cli.stderr.toString() }).toEqual({ code: 0, err: "" });
      const [cr] = parseManifests(cli.stdout.toString());
      expect(cr?.metadata).toMatchObject({ name: "refresher-image-refresh", namespace: "platform" });
      expect(cli.stdout.toString()).toContain(
        'kube_cronjob_created{namespace="platform", cronjob="refresher-image-refresh"}',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
