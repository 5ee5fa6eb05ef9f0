// The samples Prometheus stores for one series that otel-collector.yaml exposes, in promtool's
// input notation. A CronJob tick pushes a point once; the Collector's prometheus exporter then
// repeats that last value at every scrape until metric_expiration passes without a new push, and
// Prometheus marks the series stale when it disappears from the scrape. Times are minutes from
// the start of a promtool test.

/** otel-collector.yaml's prometheus metric_expiration and delta_to_cumulative max_stale, in minutes. */
export const METRIC_EXPIRATION_MINUTES = 60;
export const MAX_STALE_MINUTES = 60;

/** A point a tick pushed: minute, value. */
export type Push = readonly [minute: number, value: number];

export interface Scrape {
  /** Minutes between scrapes (the promtool test group's interval). */
  every: number;
  /** Last minute to produce a sample for. */
  until: number;
  /** The exporter's metric_expiration in minutes (otel-collector.yaml: 1h). */
  expiry?: number;
}

/** One sample per scrape: the last push's value, `stale` once it expired, then nothing. */
export function exposed(pushes: readonly Push[], s: Scrape): string {
  const expiry = s.expiry ?? METRIC_EXPIRATION_MINUTES;
  const ordered = [...pushes].sort((a, b) => a[0] - b[0]);
  const samples: string[] = [];
  let next = 0;
  let last: Push | undefined;
  for (let t = 0; t <= s.until; t += s.every) {
    while (next < ordered.length && (ordered[next] as Push)[0] <= t) last = ordered[next++];
    if (!last) samples.push("_");
    else if (t - last[0] < expiry) samples.push(String(last[1]));
    else samples.push(samples.at(-1) === "stale" || samples.at(-1) === "_" ? "_" : "stale");
  }
  return compress(samples);
}

/** A scraped source that is always there (kube-state-metrics): `value(t)` at every scrape. */
export function dense(value: (minute: number) => number | undefined, s: Scrape): string {
  const samples: string[] = [];
  for (let t = 0; t <= s.until; t += s.every) {
    const v = value(t);
    samples.push(v === undefined ? "_" : String(v));
  }
  return compress(samples);
}

/** Tick minutes from `from` to `to` inclusive, one every `every` minutes (the CronJob schedule). */
export function ticks(from: number, to: number, every = 5): number[] {
  const out: number[] = [];
  for (let t = from; t <= to; t += every) out.push(t);
  return out;
}

/**
 * A delta counter (one per tick) after delta_to_cumulative: the running sum, which restarts at 1
 * when the stream was unseen longer than max_stale (otel-collector.yaml: 1h).
 */
export function counter(tickMinutes: readonly number[], maxStale = MAX_STALE_MINUTES): Push[] {
  const out: Push[] = [];
  let total = 0;
  let prev: number | undefined;
  for (const t of tickMinutes) {
    total = prev !== undefined && t - prev > maxStale ? 1 : total + 1;
    out.push([t, total]);
    prev = t;
  }
  return out;
}

/** promtool's expanding notation: `v xN` is N+1 samples of v, `_xN` is N missing ones. */
export function compress(samples: readonly string[]): string {
  const terms: string[] = [];
  for (let i = 0; i < samples.length; ) {
    let j = i;
    while (j + 1 < samples.length && samples[j + 1] === samples[i]) j++;
    const v = samples[i] as string;
    const n = j - i + 1;
    if (n === 1) terms.push(v);
    else if (v === "_") terms.push(`_x${n}`);
    else if (v === "stale") terms.push(...Array<string>(n).fill("stale"));
    else terms.push(`${v}x${n - 1}`);
    i = j + 1;
  }
  return terms.join(" ");
}
