// The chart's metadata and layout, without Helm: its version is the program's, and the store's
// rules are a template of their own (rbac-store.yaml) so that a reviewer finds them in one place.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";

const CHART = join(import.meta.dir, "..", "..", "charts", "image-refresh");
const chart = Bun.YAML.parse(readFileSync(join(CHART, "Chart.yaml"), "utf8")) as Record<string, unknown>;

test("Chart.yaml: apiVersion v2, version and appVersion are the program's", () => {
  expect(chart).toMatchObject({
    apiVersion: "v2",
    name: "image-refresh",
    version: VERSION,
    appVersion: VERSION,
  });
});

test("one template per object kind, the store's RBAC on its own", () => {
  expect(readdirSync(join(CHART, "templates")).sort()).toEqual([
    "NOTES.txt",
    "_helpers.tpl",
    "configmap.yaml",
    "cronjob.yaml",
    "dashboards.yaml",
    "prometheusrule.yaml",
    "rbac-store.yaml",
    "rbac.yaml",
    "serviceaccount.yaml",
  ]);
  const store = readFileSync(join(CHART, "templates", "rbac-store.yaml"), "utf8");
  expect(store).toContain('resources: ["configmaps"]');
  expect(readFileSync(join(CHART, "templates", "rbac.yaml"), "utf8")).not.toContain("configmaps");
});
