// Prometheus' raw samples (a range query's matrix) turned into one value per scrape in promtool's
// notation: a scrape that found the series gives its value, the first that did not gives `stale`
// (Prometheus writes a staleness marker when a series leaves a target that is still up), later
// ones `_`. Pure: capture.ts feeds it, tests/monitoring-captured.test.ts reads what it wrote.
import { compress } from "../../../k8s/monitoring/exposition.ts";

export interface Raw {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

export interface CapturedSeries {
  metric: string;
  labels: Record<string, string>;
  values: string;
}

export interface CapturedTick {
  minute: number;
  outcome: string;
  code: number;
}

export interface Capture {
  scrapeEveryMinutes: 1;
  until: number;
  ticks: CapturedTick[];
  series: CapturedSeries[];
}

/** The scrape target's address is the test's; the promtool series name the shipped exporter's. */
export const EXPORTER_INSTANCE = "otel-collector:8889";

interface Opts {
  t0: number;
  stepMs: number;
  /** Real seconds per test second: a timestamp gauge's value is rebased to real seconds since minute 0. */
  factor: number;
  until: number;
  ticks: Array<{ endMs: number; outcome: string; code: number }>;
}

export function toCapture(raw: readonly Raw[], o: Opts): Capture {
  const all = raw.flatMap((r) => r.values.map(([ts]) => ts * 1000 - o.t0));
  // The scrapes' phase against the first tick: every sample sits on that grid.
  const phase = Math.min(...all.map((t) => ((t % o.stepMs) + o.stepMs) % o.stepMs));
  const minuteOf = (t: number) => Math.round((t - phase) / o.stepMs);
  const series = raw
    .map((r) => ({
      metric: r.metric.__name__ as string,
      labels: labelsOf(r.metric),
      values: notation(rebased(r, o.t0 + phase, o.factor), (ts) => minuteOf(ts * 1000 - o.t0), o.until),
    }))
    .sort((a, b) => key(a).localeCompare(key(b)));
  const ticks = tickMinutes(raw, o, minuteOf, phase);
  return { scrapeEveryMinutes: 1, until: o.until, ticks, series };
}

const key = (s: Pick<CapturedSeries, "metric" | "labels">) => `${s.metric}${JSON.stringify(s.labels)}`;

function labelsOf(metric: Record<string, string>): Record<string, string> {
  const { __name__: _, ...rest } = metric;
  const sorted = Object.fromEntries(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b)));
  if (sorted.job === "otel-collector") sorted.instance = EXPORTER_INSTANCE;
  return sorted;
}

/** Unix-time gauges as promtool sees time: real seconds since minute 0 of the capture. */
function rebased(r: Raw, zeroMs: number, factor: number): Raw {
  if (!r.metric.__name__?.endsWith("_timestamp_seconds")) return r;
  const real = (v: string) => String(Math.round((Number(v) - zeroMs / 1000) * factor));
  return { ...r, values: r.values.map(([ts, v]) => [ts, real(v)]) };
}

/** `minuteOf`: a sample's Unix time in seconds to its scrape's minute. */
function notation(r: Raw, minuteOf: (ts: number) => number, until: number): string {
  const samples: string[] = Array(until + 1).fill("_");
  for (const [ts, v] of r.values) {
    const m = minuteOf(ts);
    if (m >= 0 && m <= until) samples[m] = v;
  }
  return compress(
    samples.map((v, m) =>
      v === "_" && m > 0 && !["_", "stale"].includes(samples[m - 1] as string) ? "stale" : v,
    ),
  );
}

/** Each tick's minute: the first scrape after it ended at which a tick counter moved. */
function tickMinutes(
  raw: readonly Raw[],
  o: Opts,
  minuteOf: (t: number) => number,
  phase: number,
): CapturedTick[] {
  const total = new Map<number, number>();
  for (const r of raw.filter((x) => x.metric.__name__ === "image_refresh_ticks_total"))
    for (const [ts, v] of r.values) {
      const m = minuteOf(ts * 1000 - o.t0);
      total.set(m, (total.get(m) ?? 0) + Number(v));
    }
  return o.ticks.map((t) => {
    let m = Math.ceil((t.endMs - phase) / o.stepMs);
    while (m <= o.until && (total.get(m) ?? 0) <= (total.get(m - 1) ?? 0)) m++;
    return { minute: m, outcome: t.outcome, code: t.code };
  });
}
