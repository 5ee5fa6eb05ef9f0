// What kube-state-metrics' series look like to the rules: for every kube_* metric rules.yaml
// reads, the label sets a real kube-state-metrics (scraped by Prometheus as job="kube-state-metrics")
// gives a running, a failed and a succeeded Job of the CronJob, and the values they take.
// captured-ksm.json holds them, written by tests/real/pipeline/capture-ksm.ts from the real one;
// tests/telemetry/monitoring-ksm.test.ts fails when the promtool series written by hand
// (promises.ts, through series.ts) carry other names, labels or values.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export type Labels = Record<string, string>;

export interface KsmShape {
  metric: string;
  /** Labels as the promtool series spell them: instance and job_name normalized (see below). */
  labels: Labels;
  /** For a Job's series: the Job's state when the series was seen. */
  state?: "running" | "failed" | "succeeded";
  /** The values seen: numbers as text, or "timestamp" for a time in seconds. */
  values: string[];
}

export interface KsmCapture {
  kubeStateMetrics: string;
  shapes: KsmShape[];
}

export const KSM_CAPTURED_PATH = join(import.meta.dir, "captured-ksm.json");
export const readKsmCapture = (): KsmCapture =>
  JSON.parse(readFileSync(KSM_CAPTURED_PATH, "utf8")) as KsmCapture;

/** The scrape target's address is the test's; the promtool series name the shipped one's. */
export const KSM_INSTANCE = "kube-state-metrics:8080";
/** A Job's name as the rules match it (`image-refresh-.+`); the number is the schedule's. */
export const JOB_NAME = "image-refresh-<n>";

/** Every kube_* metric an expression of rules.yaml reads. */
export function ksmMetricsRead(rulesText: string): string[] {
  return [...new Set(rulesText.match(/\bkube_[a-z_]+(?=[[{)\s])/g) ?? [])].sort();
}

/** A series' labels as a shape: instance fixed, job_name generalized, __name__ dropped. */
export function normalize(labels: Labels): Labels {
  const out: Labels = {};
  for (const [k, v] of Object.entries(labels).sort(([a], [b]) => a.localeCompare(b))) {
    if (k === "__name__") continue;
    if (k === "instance") out[k] = KSM_INSTANCE;
    else if (k === "job_name") out[k] = /^image-refresh-\d+$/.test(v) ? JOB_NAME : v;
    else out[k] = v;
  }
  return out;
}

/** A value as a shape: a time metric's value is "timestamp" (the hand-kept ones count from 0), others their number. */
export function valueShape(metric: string, v: string): string {
  return /_time$|_created$/.test(metric) ? "timestamp" : String(Number(v));
}

export const shapeKey = (metric: string, labels: Labels) =>
  `${metric}{${Object.entries(normalize(labels))
    .map(([k, v]) => `${k}="${v}"`)
    .join(",")}}`;

/** promtool's notation expanded: one entry per scrape (`1x2` is three samples, `_x2` two gaps). */
export function expandValues(values: string): string[] {
  return values.split(/\s+/).flatMap((term) => {
    const m = /^(.+?)x(\d+)$/.exec(term);
    if (!m) return [term];
    const [v, n] = [m[1] as string, Number(m[2])];
    return v === "_" ? Array(n).fill("_") : Array(n + 1).fill(v);
  });
}
