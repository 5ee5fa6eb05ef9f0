// The one list of metrics. exporter.ts creates its instruments from it, and the tests check that
// every series named in k8s/monitoring (rules and dashboard) is one of these after the
// Prometheus translation below. No OpenTelemetry import: the monitoring test needs none.
import type { MetricName } from "../telemetry.ts";

export type MetricKind = "counter" | "gauge" | "histogram";

export interface MetricDef {
  name: MetricName;
  kind: MetricKind;
  /** UCUM; curly-brace units are annotations that the Prometheus translation drops. */
  unit: string;
  description: string;
  /** Histogram bucket bounds in seconds; the SDK's defaults are tuned for milliseconds. */
  buckets?: readonly number[];
}

export const METRICS = [
  {
    name: "image_refresh.attempts",
    kind: "counter",
    unit: "{attempt}",
    description: "Rollout attempts started, by image",
  },
  {
    name: "image_refresh.resets",
    kind: "counter",
    unit: "{reset}",
    description: "Attempt counters reset after a settled refresh",
  },
  {
    name: "image_refresh.lockouts",
    kind: "counter",
    unit: "{tick}",
    description: "Ticks that held a refresh of an image back because of its lockout",
  },
  {
    name: "image_refresh.reverts",
    kind: "counter",
    unit: "{revert}",
    description: "Failed rollouts of an image whose workloads were patched back to the images they had",
  },
  {
    name: "image_refresh.regressions",
    kind: "counter",
    unit: "{regression}",
    description: "Verified builds of an image whose pods failed within regressionWindow: failed attempts",
  },
  {
    name: "image_refresh.repins",
    kind: "counter",
    unit: "{repin}",
    description: "Re-pins started because a deploy tool rendered the floating tag over the pin",
  },
  {
    name: "image_refresh.skips",
    kind: "counter",
    unit: "{tick}",
    description:
      "Ticks that did not touch an image because one of its targets was not settled (skipped or frozen), by image",
  },
  {
    name: "image_refresh.ticks",
    kind: "counter",
    unit: "{tick}",
    description: "Ticks, by image_refresh.outcome",
  },
  {
    name: "image_refresh.attempt_count",
    kind: "gauge",
    unit: "{attempt}",
    description: "Consecutive failed rollout attempts of the image",
  },
  {
    name: "image_refresh.skip_streak",
    kind: "gauge",
    unit: "{tick}",
    description:
      "Consecutive ticks in which one of the image's targets was not settled, as counted in the store",
  },
  // No unit: "1" would make the Prometheus translation append _ratio.
  {
    name: "image_refresh.locked_out",
    kind: "gauge",
    unit: "",
    description: "1 while the image is locked out",
  },
  {
    name: "image_refresh.paused",
    kind: "gauge",
    unit: "",
    description: "1 while a human paused the image (a pin of their own, or a rejected build)",
  },
  {
    name: "image_refresh.build_refused",
    kind: "gauge",
    unit: "",
    description:
      "1 while the registry's new build of an image with a verify policy is refused for its signature (unsigned or invalid)",
  },
  {
    name: "image_refresh.in_sync",
    kind: "gauge",
    unit: "",
    description: "1 when every target of the image runs the pin recorded in the store",
  },
  {
    name: "image_refresh.unresolved_streak",
    kind: "gauge",
    unit: "{tick}",
    description:
      "Consecutive ticks in which the image's digest could not be resolved, as counted in the store",
  },
  {
    name: "image_refresh.last_verified_timestamp",
    kind: "gauge",
    unit: "s",
    description: "Unix time of the last tick that found the image in sync with its registry",
  },
  {
    name: "image_refresh.frozen",
    kind: "gauge",
    unit: "",
    description:
      "1 while the image is frozen: one of its targets stayed unsettled for maxSkipTicks ticks in a row",
  },
  {
    name: "image_refresh.last_success_timestamp",
    kind: "gauge",
    unit: "s",
    description: "Unix time of the last tick that exited 0",
  },
  {
    name: "image_refresh.tick.duration",
    kind: "histogram",
    unit: "s",
    description: "Duration of one tick",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  },
  {
    name: "image_refresh.rollout.duration",
    kind: "histogram",
    unit: "s",
    description: "Time from a workload patch until its rollout settled or failed",
    buckets: [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800],
  },
] as const satisfies readonly MetricDef[];

// Compile-time guard that the list and the MetricName union in lib/telemetry.ts name the same set.
type Listed = (typeof METRICS)[number]["name"];
const _everyNameListed: [MetricName] extends [Listed] ? true : never = true;
void _everyNameListed;

export function metricDef(name: MetricName): MetricDef {
  const def = METRICS.find((m) => m.name === name);
  if (!def) throw new Error(`Cannot find metric ${name}: not in METRICS`);
  return def;
}

const UNIT_SUFFIX: Record<string, string> = { s: "seconds", ms: "milliseconds", By: "bytes" };

/**
 * The name a metric gets from the Collector's Prometheus exporter (or Prometheus' OTLP receiver)
 * with the default suffixing: dots become underscores, a unit suffix is appended unless the name
 * already ends with it, annotation units ({tick}) vanish, monotonic counters end in _total.
 */
export function prometheusName(def: Pick<MetricDef, "name" | "kind" | "unit">): string {
  let name = def.name.replace(/[^a-zA-Z0-9_]/g, "_");
  const unit = UNIT_SUFFIX[def.unit] ?? (def.unit === "" || def.unit.startsWith("{") ? "" : def.unit);
  if (unit && !name.endsWith(`_${unit}`)) name += `_${unit}`;
  if (def.kind === "counter") name += "_total";
  return name;
}

/** Every series name Prometheus can hold for our metrics (histograms expose three). */
export function prometheusSeriesNames(): string[] {
  return METRICS.flatMap((m) => {
    const base = prometheusName(m);
    return m.kind === "histogram" ? [`${base}_bucket`, `${base}_sum`, `${base}_count`] : [base];
  });
}
