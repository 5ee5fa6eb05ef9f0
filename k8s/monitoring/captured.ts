// captured.json holds series captured from the real pipeline (a Collector run with
// otel-collector.yaml, scraped by Prometheus) while one installation ticked through a short story;
// tests/real/pipeline/capture.ts regenerates it. Two uses:
//   - modelOfCapture() writes the same story with series.ts and exposition.ts, the hand-kept
//     model every promise in promises.ts is written with; tests/monitoring-captured.test.ts fails
//     when the model and the capture drift apart (labels, repetition, expiry, staleness);
//   - capturedCase() is a promtool case whose input is the captured series themselves.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { counter, exposed, type Push } from "./exposition.ts";
import { type Case, during, imageKey, installation, type Labels, type Series } from "./series.ts";

export interface CapturedFile {
  factor: number;
  scrapeEveryMinutes: 1;
  until: number;
  ticks: Array<{ minute: number; outcome: string; code: number }>;
  series: Array<{ metric: string; labels: Labels; values: string }>;
}

export const CAPTURED_PATH = join(import.meta.dir, "captured.json");
export const readCaptured = (): CapturedFile =>
  JSON.parse(readFileSync(CAPTURED_PATH, "utf8")) as CapturedFile;

/** The story capture.ts plays: the installation, and which ticks found node-agent unresolved. */
export const CAPTURE = installation("capture", "deployment", "state");
export const CAPTURE_IMAGES = {
  api: imageKey("api", "myorg/api"),
  "node-agent": imageKey("node-agent", "myorg/node-agent"),
};
const SKIPPING = new Set(["skipped", "frozen"]);

const selector = (metric: string, labels: Labels) =>
  `${metric}{${Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}="${v}"`)
    .join(", ")}}`;

/**
 * The series the model says this story produces, for every metric the rules read. Per-image
 * gauges come from ticks that got past the settled guard; last_success from ticks that exited 0;
 * last_verified from settled ticks after the first observation that resolved the image.
 */
export function modelOfCapture(c: CapturedFile): Series[] {
  const s = { every: 1, until: c.until };
  const own = { ...CAPTURE.labels, ...CAPTURE.exporter };
  const at = (pred: (t: CapturedFile["ticks"][number], k: number) => boolean) =>
    c.ticks.filter(pred).map((t) => t.minute);
  const out: Series[] = [];
  const put = (metric: string, labels: Labels, pushes: Push[]) =>
    out.push({ series: selector(metric, labels), values: exposed(pushes, s) });
  for (const outcome of new Set(c.ticks.map((t) => t.outcome)))
    put(
      "image_refresh_ticks_total",
      { ...own, image_refresh_outcome: outcome },
      counter(at((t) => t.outcome === outcome)),
    );
  put(
    "image_refresh_frozen",
    own,
    c.ticks.map((t) => [t.minute, t.outcome === "frozen" ? 1 : 0]),
  );
  put(
    "image_refresh_last_success_timestamp_seconds",
    own,
    at((t) => t.code === 0).map((m) => [m, m * 60]),
  );
  const settled = at((t) => !SKIPPING.has(t.outcome));
  const unresolved = at((t) => t.outcome === "unresolved");
  for (const [key, image] of Object.entries(CAPTURE_IMAGES)) {
    const labels = { ...own, ...image };
    const streak = (m: number) =>
      key === "node-agent" && unresolved.includes(m)
        ? unresolved.filter((u) => u <= m && u > lastResolved(c, m)).length
        : 0;
    for (const g of ["locked_out", "paused"])
      put(
        `image_refresh_${g}`,
        labels,
        settled.map((m) => [m, 0]),
      );
    put(
      "image_refresh_unresolved_streak",
      labels,
      settled.map((m) => [m, streak(m)]),
    );
    put(
      "image_refresh_in_sync",
      labels,
      settled.map((m) => [m, m === settled[0] ? 0 : 1]),
    );
    const verified = settled.filter((m) => m !== settled[0] && streak(m) === 0);
    put(
      "image_refresh_last_verified_timestamp_seconds",
      labels,
      verified.map((m) => [m, m * 60]),
    );
  }
  return out;
}

/** The last settled tick before `m` that was not unresolved (where the streak restarts). */
function lastResolved(c: CapturedFile, m: number): number {
  const ok = c.ticks.filter((t) => t.minute < m && !SKIPPING.has(t.outcome) && t.outcome !== "unresolved");
  return ok.at(-1)?.minute ?? -1;
}

/** The captured series as promtool input, with what the rules must say about them. */
export function capturedCase(c: CapturedFile): Case {
  const own = CAPTURE.labels;
  const agent = { ...own, ...CAPTURE_IMAGES["node-agent"] };
  const minute = (outcome: string, nth = 0) =>
    c.ticks.filter((t) => t.outcome === outcome)[nth]?.minute as number;
  const streak2 = minute("unresolved", 1);
  const frozen = minute("frozen");
  const last = c.ticks.at(-1)?.minute as number;
  const resolved = c.ticks.find((t) => t.minute > streak2)?.minute as number;
  return {
    name: "captured from the real pipeline: unresolved twice, frozen, then the CronJob stops",
    scrape: { every: 1, until: c.until },
    series: c.series.map((x) => ({ series: selector(x.metric, { ...x.labels }), values: x.values })),
    expect: [
      ...during("ImageRefreshUnresolvedStreak", [streak2 - 1, resolved + 1], []),
      ...during("ImageRefreshUnresolvedStreak", [streak2 + 1], [agent]),
      ...during("ImageRefreshFrozen", [frozen - 1], []),
      ...during("ImageRefreshFrozen", [frozen + 1, c.until], [own]),
      ...during("ImageRefreshNoTicks", [last + 29], []),
      ...during("ImageRefreshNoTicks", [last + 31, c.until], [own]),
      ...during("ImageRefreshNoRecentSuccess", [c.until], []),
      ...during("ImageRefreshLockedOut", [c.until], []),
      ...during("ImageRefreshImageStale", [streak2 + 1], []),
      ...during("ImageRefreshNoTelemetry", [c.until], []),
    ],
  };
}
