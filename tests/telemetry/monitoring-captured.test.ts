// The hand-kept model of the Collector's exposition (k8s/monitoring/series.ts and exposition.ts,
// what every promtool promise is written with) against series captured from the real pipeline
// (k8s/monitoring/captured.json, written by tests/real/pipeline/capture.ts): same series, same
// labels, a sample per scrape repeated until metric_expiration, then `stale`, then nothing.
// Timestamp gauges carry wall-clock seconds in the capture: compared by where they change.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { modelOfCapture, readCaptured } from "../../k8s/monitoring/captured.ts";

const captured = readCaptured();
const rulesText = readFileSync(join(import.meta.dir, "..", "..", "k8s", "monitoring", "rules.yaml"), "utf8");
/** Every image_refresh series the rules read. */
const READ = [...new Set(rulesText.match(/\bimage_refresh_[a-z_]+(?=[[{)\s])/g) ?? [])].filter(
  (n) => !/^image_refresh_(image|outcome|installation)$/.test(n),
);

/** promtool's notation expanded: one entry per scrape. */
export function expand(values: string): string[] {
  return values.split(/\s+/).flatMap((term) => {
    const m = /^(.+?)x(\d+)$/.exec(term);
    if (!m) return [term];
    const [v, n] = [m[1] as string, Number(m[2])];
    return v === "_" ? Array(n).fill("_") : Array(n + 1).fill(v);
  });
}

/** A timestamp series by shape: each distinct value replaced by its order of appearance. */
function shape(samples: string[]): string[] {
  const seen = new Map<string, string>();
  return samples.map((v) => {
    if (v === "_" || v === "stale") return v;
    if (!seen.has(v)) seen.set(v, `v${seen.size}`);
    return seen.get(v) as string;
  });
}

const parse = (selector: string) => {
  const m = /^(\w+)\{(.*)\}$/.exec(selector) as RegExpExecArray;
  const labels = Object.fromEntries(
    [...(m[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
  );
  return { metric: m[1] as string, labels };
};
const key = (metric: string, labels: Record<string, string>) =>
  `${metric}{${Object.entries(labels)
    .filter(([k]) => k !== "otel_scope_version")
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(",")}}`;
const norm = (metric: string, values: string) =>
  metric.endsWith("_timestamp_seconds") ? shape(expand(values)).join(" ") : expand(values).join(" ");

describe("captured series (real pipeline) and the hand-kept model agree", () => {
  const real = new Map(
    captured.series.filter((s) => READ.includes(s.metric)).map((s) => [key(s.metric, s.labels), s]),
  );
  const model = new Map(
    modelOfCapture(captured).map((s) => {
      const { metric, labels } = parse(s.series);
      return [key(metric, labels), { metric, labels, values: s.values }];
    }),
  );

  test("the capture holds every series the rules read", () => {
    expect(READ.length).toBeGreaterThan(6);
    const metrics = new Set([...real.values()].map((s) => s.metric));
    // build_refused is pushed only for an image with a verify policy, which the captured story
    // has none of: its promise (promises.ts, buildRefused) models it like the other state gauges.
    const notInStory = (n: string) =>
      n.startsWith("image_refresh_ticks_total") || n === "image_refresh_build_refused";
    expect(READ.filter((n) => !metrics.has(n) && !notInStory(n))).toEqual([]);
  });

  test("same series, with the same labels", () => {
    expect([...model.keys()].sort()).toEqual([...real.keys()].sort());
    for (const [k, s] of real)
      expect({ k, version: "otel_scope_version" in s.labels }).toEqual({ k, version: true });
  });

  test("each series has the same sample at every scrape", () => {
    for (const [k, r] of real) {
      const m = model.get(k);
      expect({ k, values: m && norm(m.metric, m.values) }).toEqual({ k, values: norm(r.metric, r.values) });
    }
  });

  test("expand undoes promtool's notation", () => {
    expect(expand("_x2 1x1 stale 4")).toEqual(["_", "_", "1", "1", "stale", "4"]);
  });
});
