// The input series of promises.ts, labelled as the pipeline labels them: an installation's
// label (its store, `<namespace>/<name>`) plus what the Collector's exporter adds, an image's key and repository,
// kube-state-metrics' CronJob labels.
import { VERSION } from "../../lib/version.ts";
import { counter, dense, exposed, type Push, type Scrape } from "./exposition.ts";

export type Labels = Record<string, string>;
export interface Series {
  series: string;
  values: string;
}
export interface Expect {
  at: number;
  alert: string;
  firing: Labels[];
}
export interface Case {
  name: string;
  scrape: Scrape;
  series: Series[];
  expect: Expect[];
}

export interface Installation {
  labels: Labels;
  /** Labels the Collector's exporter and the scrape add; `by` must drop them. */
  exporter: Labels;
}

/**
 * The labels a scrape of the Collector's prometheus exporter gives, as captured from the real
 * pipeline (captured.json): the exporter's job and instance (service.name, service.instance.id)
 * renamed exported_* by Prometheus (honor_labels: false, its default), the scrape's own job and
 * instance, and the instrumentation scope's name and version.
 */
export const SCRAPE_JOB: Labels = { job: "otel-collector", instance: "otel-collector:8889" };

/** The installation of the store `ns/name`: every point carries image_refresh.installation. */
export function installation(ns: string, name = "image-refresh-state"): Installation {
  return {
    labels: { image_refresh_installation: `${ns}/${name}` },
    exporter: {
      exported_instance: `${ns}/${name}`,
      exported_job: "image-refresh",
      ...SCRAPE_JOB,
      otel_scope_name: "image-refresh",
      otel_scope_version: VERSION,
    },
  };
}

function selector(metric: string, labels: Labels): string {
  const inner = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(", ");
  return `${metric}{${inner}}`;
}

/** The tick counter of one installation, one series per outcome (`ticksByOutcome`: minutes). */
export function tickCounters(i: Installation, ticksByOutcome: Record<string, number[]>, s: Scrape): Series[] {
  return Object.entries(ticksByOutcome).map(([outcome, at]) => ({
    series: selector("image_refresh_ticks_total", {
      ...i.labels,
      ...i.exporter,
      image_refresh_outcome: outcome,
    }),
    values: exposed(counter(at), s),
  }));
}

export function gauge(metric: string, labels: Labels, pushes: readonly Push[], s: Scrape): Series {
  return { series: selector(metric, labels), values: exposed(pushes, s) };
}

/** Per-image gauges a tick pushes; last_verified only on ticks that found the image in sync. */
export interface ImageState {
  locked_out?: number;
  paused?: number;
  unresolved_streak?: number;
  in_sync?: number;
  skip_streak?: number;
  frozen?: number;
  verified?: boolean;
}

const IMAGE_STATE_GAUGES = [
  "locked_out",
  "paused",
  "unresolved_streak",
  "in_sync",
  "skip_streak",
  "frozen",
] as const;

export function imageKey(key: string, repository: string): Labels {
  return { image_refresh_image: key, container_image_name: repository };
}

/** The per-image gauges of one image over `at` ticks, its state at each tick from `state`. */
export function imageGauges(
  i: Installation,
  image: Labels,
  at: readonly number[],
  state: (minute: number) => ImageState,
  s: Scrape,
): Series[] {
  const labels = { ...i.labels, ...i.exporter, ...image };
  const out: Series[] = [];
  for (const name of IMAGE_STATE_GAUGES) {
    const pushes = at.map((t): Push => [t, state(t)[name] ?? 0]);
    out.push(gauge(`image_refresh_${name}`, labels, pushes, s));
  }
  const verified = at.filter((t) => state(t).verified).map((t): Push => [t, t * 60]);
  if (verified.length > 0)
    out.push(gauge("image_refresh_last_verified_timestamp_seconds", labels, verified, s));
  return out;
}

/** kube-state-metrics series: scraped every minute, always present while the object exists. */
export const KSM: Labels = {
  namespace: "image-refresh",
  cronjob: "image-refresh",
  job: "kube-state-metrics",
  instance: "kube-state-metrics:8080",
};

export function ksm(metric: string, value: (minute: number) => number | undefined, s: Scrape): Series {
  return { series: selector(metric, KSM), values: dense(value, s) };
}

/** The labels of a Job's kube-state-metrics series. */
export function ksmJob(jobName: string): Labels {
  return {
    namespace: "image-refresh",
    job_name: jobName,
    job: KSM.job as string,
    instance: KSM.instance as string,
  };
}

export function ksmOf(
  metric: string,
  labels: Labels,
  value: (minute: number) => number | undefined,
  s: Scrape,
): Series {
  return { series: selector(metric, labels), values: dense(value, s) };
}

/** The reasons kube-state-metrics gives a failed Job's kube_job_status_failed a series for. */
export const JOB_FAILURE_REASONS = ["BackoffLimitExceeded", "DeadlineExceeded", "Evicted"];

/**
 * kube_job_status_failed of a Job that starts at `start` and fails at `failed`, as the real
 * kube-state-metrics gives it (captured-ksm.json): one series without `reason`, 0, while the Job
 * runs; once it failed, that one is gone and there is one per known reason, 1 for the Job's
 * (BackoffLimitExceeded: with backoffLimit 0 its one pod failed), 0 for the others.
 */
export function ksmJobFailed(
  job: Labels,
  start: number,
  failed: number | undefined,
  s: Scrape,
  reason = "BackoffLimitExceeded",
): Series[] {
  const gone = (t: number) => failed !== undefined && t >= failed;
  return [
    ksmOf("kube_job_status_failed", job, (t) => (t >= start && !gone(t) ? 0 : undefined), s),
    ...JOB_FAILURE_REASONS.map((r) =>
      ksmOf(
        "kube_job_status_failed",
        { ...job, reason: r },
        (t) => (gone(t) ? (r === reason ? 1 : 0) : undefined),
        s,
      ),
    ),
  ];
}

/** `firing` at each of `minutes`. */
export function during(alert: string, minutes: readonly number[], firing: Labels[]): Expect[] {
  return minutes.map((at) => ({ at, alert, firing }));
}
