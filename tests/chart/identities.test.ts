// Where each cloud's workload identity is bound, as the chart and the kustomize base show it in
// comments: the commented examples, uncommented, are the three clouds' ServiceAccount annotations
// (and Azure's pod label), valid for the chart's values schema beside a registry with that `auth`,
// and they land where the templates put them. Helm's own rendering of them is
// tests/real/chart/lint-template.test.ts.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { CHART_VALUES_SCHEMA } from "../../scripts/gen-schema.ts";

const ROOT = join(import.meta.dir, "..", "..");
const CHART = join(ROOT, "charts", "image-refresh");
const read = (...p: string[]) => readFileSync(join(...p), "utf8");
const chartValid = new Ajv2020({ allErrors: true, strict: false }).compile(
  JSON.parse(read(CHART_VALUES_SCHEMA)),
);

const ANNOTATIONS = {
  aws: "eks.amazonaws.com/role-arn",
  gcp: "iam.gke.io/gcp-service-account",
  azure: "azure.workload.identity/client-id",
} as const;
const AZURE_LABEL = "azure.workload.identity/use";

/** The commented YAML after `marker` (lines `#` + indentation), uncommented, up to the first line that is not a comment. */
function commented(text: string, marker: RegExp): Record<string, unknown> {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => marker.test(l));
  const block: string[] = [];
  for (const l of lines.slice(start)) {
    const m = /^(\s*)#(.*)$/.exec(l);
    if (!m) break;
    block.push(m[2] as string);
  }
  const yaml = block.filter((l) => !/^\s*#/.test(l) && /:(\s|$)/.test(l)).join("\n");
  const indent = Math.min(...yaml.split("\n").map((l) => (/^ */.exec(l) as RegExpExecArray)[0].length));
  return Bun.YAML.parse(
    yaml
      .split("\n")
      .map((l) => l.slice(indent))
      .join("\n"),
  ) as Record<string, unknown>;
}

describe("the chart", () => {
  const values = read(CHART, "values.yaml");
  const example = commented(values, /^#\s+annotations:\s*$/) as { annotations: Record<string, string> };
  const label = commented(values, new RegExp(`^#\\s+${AZURE_LABEL}:`));

  test("values.yaml shows each cloud's ServiceAccount annotation, and Azure's pod label", () => {
    expect(Object.keys(example.annotations).sort()).toEqual(Object.values(ANNOTATIONS).sort());
    expect(label).toEqual({ [AZURE_LABEL]: "true" });
  });

  for (const [auth, key] of Object.entries(ANNOTATIONS))
    test(`auth: ${auth} with its annotation${auth === "azure" ? " and pod label" : ""}: valid values`, () => {
      // Helm merges the user's values over values.yaml's, map by map.
      const defaults = Bun.YAML.parse(values) as { config: { registry: object } };
      const doc = {
        ...defaults,
        serviceAccount: { annotations: { [key]: example.annotations[key] } },
        ...(auth === "azure" ? { podLabels: label } : {}),
        config: { ...defaults.config, registry: { ...defaults.config.registry, auth } },
      };
      expect(chartValid(doc), JSON.stringify(chartValid.errors)).toBe(true);
    });

  test("the templates put serviceAccount.annotations on the ServiceAccount and podLabels on the tick's pod", () => {
    expect(read(CHART, "templates", "serviceaccount.yaml")).toContain("(.Values.serviceAccount).annotations");
    const cronjob = read(CHART, "templates", "cronjob.yaml");
    const pod = cronjob.slice(cronjob.indexOf("template:"));
    expect(pod.slice(0, pod.indexOf("spec:"))).toContain(".Values.podLabels");
  });
});

describe("the kustomize base", () => {
  test("serviceaccount.yaml shows each cloud's annotation; cronjob.yaml shows Azure's pod label on the pod template", () => {
    const sa = commented(read(ROOT, "k8s", "base", "serviceaccount.yaml"), /^\s*#\s+annotations:\s*$/) as {
      annotations: Record<string, string>;
    };
    expect(Object.keys(sa.annotations).sort()).toEqual(Object.values(ANNOTATIONS).sort());
    const cronjob = read(ROOT, "k8s", "base", "cronjob.yaml");
    const labels = cronjob.slice(
      cronjob.indexOf("        metadata:\n          labels:"),
      cronjob.indexOf("        spec:"),
    );
    expect(labels).toContain(`# ${AZURE_LABEL}: "true"`);
  });
});
