// The chart's metadata and layout, without Helm: its version is the program's, and the store's
// rules are a template of their own (rbac-store.yaml) so that a reviewer finds them in one place.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
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

// values.yaml is the first thing a Helm user reads: its pointers must lead somewhere, and its
// example config (and the one in docs/install-helm.md) must not teach the legacy `state:` key.
test("values.yaml names only README sections and docs pages that exist, and no example sets the legacy state:", () => {
  const values = readFileSync(join(CHART, "values.yaml"), "utf8");
  const readme = readFileSync(join(CHART, "..", "..", "README.md"), "utf8");
  const headings = new Set([...readme.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]));
  const pointers = [...values.matchAll(/README "([^"]+)"/g)].map((m) => m[1]);
  expect(pointers.length).toBeGreaterThan(0);
  expect(pointers.filter((p) => !headings.has(p))).toEqual([]);
  const pages = [...values.matchAll(/\bdocs\/[\w-]+\.md\b/g)].map((m) => m[0]);
  expect(pages.length).toBeGreaterThan(0);
  expect(pages.filter((p) => !existsSync(join(CHART, "..", "..", p)))).toEqual([]);
  const doc = readFileSync(join(CHART, "..", "..", "docs", "install-helm.md"), "utf8");
  const examples = [values, ...[...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string)];
  for (const text of examples) expect(text).not.toMatch(/^\s*state:/m);
});
