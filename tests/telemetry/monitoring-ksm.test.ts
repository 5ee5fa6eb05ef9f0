// The kube-state-metrics series the promtool tests are written with (promises.ts through
// series.ts, in rules.test.yaml and rules.days.test.yaml) against those a real kube-state-metrics
// gave the rules (k8s/monitoring/captured-ksm.json, written by tests/real/pipeline/capture-ksm.ts):
// every hand-kept series must have a real counterpart with the same name and labels, and take
// only values the real one takes (a failed Job's count is 1 only on its reason="..." series).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  expandValues,
  ksmMetricsRead,
  readKsmCapture,
  shapeKey,
  valueShape,
} from "../../k8s/monitoring/ksm-shapes.ts";

const DIR = join(import.meta.dir, "..", "..", "k8s", "monitoring");
const captured = readKsmCapture();
const rulesText = readFileSync(join(DIR, "rules.yaml"), "utf8");

interface TestFile {
  tests: Array<{ name: string; input_series: Array<{ series: string; values: string }> }>;
}

/** Every kube_* input series of the promtool test files, with the test it is in. */
function handKept(): Array<{
  test: string;
  metric: string;
  labels: Record<string, string>;
  values: string[];
}> {
  return ["rules.test.yaml", "rules.days.test.yaml"].flatMap((f) =>
    (Bun.YAML.parse(readFileSync(join(DIR, f), "utf8")) as TestFile).tests.flatMap((t) =>
      t.input_series
        .filter((s) => s.series.startsWith("kube_"))
        .map((s) => {
          const m = /^(\w+)\{(.*)\}$/.exec(s.series) as RegExpExecArray;
          const labels = Object.fromEntries(
            [...(m[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1] as string, x[2] as string]),
          );
          const values = expandValues(String(s.values)).filter((v) => v !== "_" && v !== "stale");
          return { test: t.name, metric: m[1] as string, labels, values };
        }),
    ),
  );
}

describe("kube-state-metrics: the hand-kept promtool series and the real ones agree", () => {
  const real = new Map<string, Set<string>>();
  for (const s of captured.shapes) {
    const k = shapeKey(s.metric, s.labels);
    real.set(k, new Set([...(real.get(k) ?? []), ...s.values]));
  }
  const kept = handKept();

  test("the capture holds every kube_* series the rules read", () => {
    const names = new Set(captured.shapes.map((s) => s.metric));
    const read = ksmMetricsRead(rulesText);
    expect(read.length).toBeGreaterThanOrEqual(6);
    expect(read.filter((n) => !names.has(n))).toEqual([]);
  });

  test("the promtool tests read kube-state-metrics series", () => {
    expect(kept.length).toBeGreaterThan(10);
  });

  test("every hand-kept series has a real counterpart: same name, same labels", () => {
    const missing = kept
      .map((s) => ({ test: s.test, series: shapeKey(s.metric, s.labels) }))
      .filter((s) => !real.has(s.series));
    expect(missing).toEqual([]);
  });

  test("and takes only values the real one takes", () => {
    const odd = kept.flatMap((s) => {
      const k = shapeKey(s.metric, s.labels);
      const allowed = real.get(k);
      if (!allowed) return [];
      const bad = [...new Set(s.values.map((v) => valueShape(s.metric, v)))].filter((v) => !allowed.has(v));
      return bad.length ? [{ test: s.test, series: k, values: bad, real: [...allowed] }] : [];
    });
    expect(odd).toEqual([]);
  });
});
