// What each alert in rules.yaml promises, as promtool cases over the series a real pipeline
// produces (exposition.ts: a sample every scrape, the last push repeated until the Collector's
// 1h metric_expiration, then gone). generate.ts writes MINUTES into rules.test.yaml (evaluated
// every minute: the timing each alert's text promises) and DAYS into rules.days.test.yaml
// (every 10 minutes: what still fires days later). Minutes count from the start of a case.
import { ticks } from "./exposition.ts";
import {
  type Case,
  during,
  gauge,
  imageGauges,
  imageKey,
  installation,
  KSM,
  ksm,
  ksmJob,
  ksmJobFailed,
  ksmOf,
  tickCounters,
} from "./series.ts";

const api = installation("apps");
const agents = installation("agents");
const pg = installation("db");
const API = imageKey("api", "myorg/api");
const NODE_AGENT = imageKey("node-agent", "myorg/node-agent");

const oneStopsAmongHealthy = (): Case => {
  const scrape = { every: 1, until: 200 };
  return {
    name: "NoTicks: one installation stops among healthy ones, 30 minutes after its last tick",
    scrape,
    series: [
      ...tickCounters(api, { recorded: [0], noop: ticks(5, 200) }, scrape),
      ...tickCounters(agents, { recorded: [0], noop: ticks(5, 60) }, scrape),
      // A new installation's first ticks are ticks, not silence.
      ...tickCounters(pg, { recorded: [120], noop: ticks(125, 200) }, scrape),
    ],
    expect: [
      ...during("ImageRefreshNoTicks", [59, 89], []),
      // Its last tick was at 60; its series stay exposed until 120, and after that.
      ...during("ImageRefreshNoTicks", [91, 119, 121, 125, 200], [agents.labels]),
      ...during("ImageRefreshNoTelemetry", [200], []),
    ],
  };
};

const stopsWhileLockedOut = (): Case => {
  const scrape = { every: 1, until: 300 };
  const at = ticks(0, 60);
  return {
    name: "LockedOut: a CronJob that stops while locked out keeps firing, NoTicks joins at 30 minutes",
    scrape,
    series: [
      ...tickCounters(api, { locked_out: at }, scrape),
      ...imageGauges(api, API, at, () => ({ locked_out: 1 }), scrape),
      // Rearmed at 33: the tick at 35 reports it clear.
      ...imageGauges(
        api,
        NODE_AGENT,
        at,
        (t) => ({ locked_out: t <= 30 ? 1 : 0, in_sync: t > 30 ? 1 : 0 }),
        scrape,
      ),
    ],
    expect: [
      ...during(
        "ImageRefreshLockedOut",
        [0, 11, 21, 31],
        [
          { ...api.labels, ...API },
          { ...api.labels, ...NODE_AGENT },
        ],
      ),
      ...during("ImageRefreshLockedOut", ticks(36, 300, 10), [{ ...api.labels, ...API }]),
      ...during("ImageRefreshLockedOut", [119, 120, 121], [{ ...api.labels, ...API }]),
      ...during("ImageRefreshNoTicks", [89], []),
      ...during("ImageRefreshNoTicks", [91, 121, 300], [api.labels]),
      ...during("ImageRefreshFrozen", [30, 300], []),
    ],
  };
};

const neverSucceeded = (): Case => {
  const scrape = { every: 1, until: 300 };
  const failing = ticks(5, 300);
  return {
    name: "NoRecentSuccess: 2 hours after the last success, and for an installation that never succeeded; Frozen after its CronJob stops",
    scrape,
    series: [
      ...tickCounters(api, { recorded: [0], failed: failing }, scrape),
      gauge(
        "image_refresh_last_success_timestamp_seconds",
        { ...api.labels, ...api.exporter },
        [[0, 0]],
        scrape,
      ),
      // api frozen (a target that does not settle), node-agent going on; the CronJob stops at
      // 120: the freeze still shows, for the frozen image only.
      ...tickCounters(pg, { frozen: ticks(0, 120) }, scrape),
      ...imageGauges(pg, API, ticks(0, 120), () => ({ frozen: 1, skip_streak: 3, in_sync: 1 }), scrape),
      ...imageGauges(pg, NODE_AGENT, ticks(0, 120), () => ({ in_sync: 1, verified: true }), scrape),
    ],
    expect: [
      ...during("ImageRefreshNoRecentSuccess", [60, 119], []),
      ...during("ImageRefreshNoRecentSuccess", [121, 200, 300], [api.labels, pg.labels]),
      ...during("ImageRefreshFrozen", [1, 150, 300], [{ ...pg.labels, ...API }]),
      ...during("ImageRefreshNoTicks", [149], []),
      ...during("ImageRefreshNoTicks", [151, 300], [pg.labels]),
    ],
  };
};

const perImage = (): Case => {
  const scrape = { every: 1, until: 400 };
  const at = ticks(0, 400);
  const agent = imageKey("agent", "myorg/agent");
  const web = imageKey("web", "myorg/web");
  const db = imageKey("db", "myorg/db");
  const own = (image: Record<string, string>) => ({ ...api.labels, ...image });
  return {
    name: "per image: unresolved streak, stale at 8, paused for an hour, not verified for 6 hours",
    scrape,
    series: [
      ...tickCounters(
        api,
        { unresolved: ticks(0, 30), stale: ticks(35, 45), paused: ticks(50, 400) },
        scrape,
      ),
      ...imageGauges(api, API, at, () => ({ in_sync: 1, verified: true }), scrape),
      // Unresolved from the first tick (streak 1 at 0, 8 at 35), resolved again at 50.
      ...imageGauges(
        api,
        agent,
        at,
        (t) => (t < 50 ? { unresolved_streak: t / 5 + 1 } : { in_sync: 1, verified: true }),
        scrape,
      ),
      ...imageGauges(api, web, at, () => ({ paused: 1 }), scrape),
      // In sync until 30, then a new build it never gets to (last verified at 30).
      ...imageGauges(api, db, at, (t) => (t <= 30 ? { in_sync: 1, verified: true } : {}), scrape),
    ],
    expect: [
      ...during("ImageRefreshUnresolvedStreak", [4], []),
      ...during("ImageRefreshUnresolvedStreak", [6, 34, 49], [own(agent)]),
      ...during("ImageRefreshUnresolvedStreak", [51], []),
      ...during("ImageRefreshImageStale", [34, 51], []),
      ...during("ImageRefreshImageStale", [36, 49], [own(agent)]),
      ...during("ImageRefreshImagePaused", [59], []),
      ...during("ImageRefreshImagePaused", [61, 400], [own(web)]),
      ...during("ImageRefreshNotVerified", [359], []),
      ...during("ImageRefreshNotVerified", [361, 389], [own(web)]),
      ...during("ImageRefreshNotVerified", [391, 400], [own(web), own(db)]),
      ...during("ImageRefreshLockedOut", [100, 400], []),
    ],
  };
};

const notInSync = (): Case => {
  const scrape = { every: 1, until: 300 };
  const at = ticks(0, 300);
  const own = (image: Record<string, string>) => ({ ...api.labels, ...image });
  return {
    name: "NotInSync: a target off the recorded pin for 2 hours (a re-rendered tag left drifted)",
    scrape,
    series: [
      ...tickCounters(api, { noop: ticks(0, 15), drifted: ticks(20, 300) }, scrape),
      // In sync until 15; from 20 on, a deploy tool's tag is left in place (reconcile: report).
      ...imageGauges(
        api,
        API,
        at,
        (t) => (t < 20 ? { in_sync: 1, verified: true } : { verified: true }),
        scrape,
      ),
      // A refresh in progress reports in sync again on the next tick: never an alert.
      ...imageGauges(api, NODE_AGENT, at, (t) => (t === 100 ? {} : { in_sync: 1, verified: true }), scrape),
    ],
    expect: [
      ...during("ImageRefreshNotInSync", [139], []),
      ...during("ImageRefreshNotInSync", [141, 300], [own(API)]),
      ...during("ImageRefreshNotVerified", [300], []),
    ],
  };
};

const cronJobStopsBeingScheduled = (): Case => {
  const scrape = { every: 1, until: 120 };
  const lastSchedule = (t: number) => Math.floor(Math.min(t, 60) / 5) * 5 * 60;
  return {
    name: "CronJobNotScheduled: 30 minutes after the last schedule",
    scrape,
    series: [
      ksm("kube_cronjob_created", () => 0, scrape),
      ksm("kube_cronjob_spec_suspend", () => 0, scrape),
      ksm("kube_cronjob_status_last_schedule_time", lastSchedule, scrape),
      ksm("kube_cronjob_status_last_successful_time", lastSchedule, scrape),
    ],
    expect: [
      ...during("ImageRefreshCronJobNotScheduled", [60, 89], []),
      ...during("ImageRefreshCronJobNotScheduled", [91, 120], [KSM]),
      ...during("ImageRefreshCronJobNoSuccess", [120], []),
    ],
  };
};

const cronJobNeverScheduled = (): Case => {
  const scrape = { every: 1, until: 130 };
  return {
    name: "CronJobNotScheduled and CronJobNoSuccess: a CronJob that never ran",
    scrape,
    series: [ksm("kube_cronjob_created", () => 0, scrape), ksm("kube_cronjob_spec_suspend", () => 0, scrape)],
    expect: [
      ...during("ImageRefreshCronJobNotScheduled", [29], []),
      ...during("ImageRefreshCronJobNotScheduled", [31, 130], [KSM]),
      ...during("ImageRefreshCronJobNoSuccess", [119], []),
      ...during("ImageRefreshCronJobNoSuccess", [121, 130], [KSM]),
    ],
  };
};

const cronJobSuspended = (): Case => {
  const scrape = { every: 1, until: 60 };
  const lastSchedule = (t: number) => Math.floor(Math.min(t, 10) / 5) * 5 * 60;
  return {
    name: "CronJobNotScheduled: suspended for 30 minutes",
    scrape,
    series: [
      ksm("kube_cronjob_created", () => 0, scrape),
      ksm("kube_cronjob_spec_suspend", (t) => (t >= 10 ? 1 : 0), scrape),
      ksm("kube_cronjob_status_last_schedule_time", lastSchedule, scrape),
    ],
    expect: [
      ...during("ImageRefreshCronJobNotScheduled", [39], []),
      // The suspension, one minute before the schedule's own 30 minutes run out.
      ...during("ImageRefreshCronJobNotScheduled", [40, 60], [KSM]),
    ],
  };
};

const nothingAtAll = (): Case => {
  const scrape = { every: 1, until: 40 };
  return {
    name: "NoTelemetry: no image-refresh series at all for 30 minutes",
    scrape,
    series: [ksm("kube_cronjob_created", () => 0, scrape)],
    expect: [
      ...during("ImageRefreshNoTelemetry", [29], []),
      ...during("ImageRefreshNoTelemetry", [31, 40], [{}]),
      ...during("ImageRefreshNoTicks", [40], []),
    ],
  };
};

const jobFails = (): Case => {
  const scrape = { every: 1, until: 130 };
  const job = ksmJob("image-refresh-29000000");
  // Started at 5, failed at 6; Jobs stay in history, so the alert must end an hour after the start.
  return {
    name: "TickFailed: a failed Job fires for the hour after it started",
    scrape,
    series: [
      ksmOf("kube_job_status_start_time", job, (t) => (t >= 5 ? 300 : undefined), scrape),
      ...ksmJobFailed(job, 5, 6, scrape),
    ],
    expect: [
      ...during("ImageRefreshTickFailed", [5], []),
      ...during("ImageRefreshTickFailed", [7, 64], [{ ...job, reason: "BackoffLimitExceeded" }]),
      ...during("ImageRefreshTickFailed", [66, 130], []),
    ],
  };
};

/**
 * A lockout ticks on, each tick exiting 1: its Job fails too, so TickFailed fires beside
 * LockedOut (the runbook, docs/on-call.md, says to follow LockedOut), and NoRecentSuccess joins 2 hours after the
 * last success.
 */
const lockoutFailsJobs = (): Case => {
  const scrape = { every: 1, until: 180 };
  const at = ticks(5, 180);
  const job = ksmJob("image-refresh-29000005");
  return {
    name: "LockedOut with TickFailed: every lockout tick fails its Job; NoRecentSuccess after 2 hours",
    scrape,
    series: [
      ...tickCounters(api, { noop: [0], locked_out: at }, scrape),
      gauge(
        "image_refresh_last_success_timestamp_seconds",
        { ...api.labels, ...api.exporter },
        [[0, 0]],
        scrape,
      ),
      ...imageGauges(api, NODE_AGENT, [0, ...at], (t) => ({ locked_out: t > 0 ? 1 : 0, in_sync: 1 }), scrape),
      // The newest Job (started at 175 min) failed; kube-state-metrics shows it from its start.
      ksmOf("kube_job_status_start_time", job, (t) => (t >= 175 ? 175 * 60 : undefined), scrape),
      ...ksmJobFailed(job, 175, 176, scrape),
    ],
    expect: [
      ...during("ImageRefreshLockedOut", [6, 120, 177], [{ ...api.labels, ...NODE_AGENT }]),
      ...during("ImageRefreshTickFailed", [177], [{ ...job, reason: "BackoffLimitExceeded" }]),
      ...during("ImageRefreshNoRecentSuccess", [119], []),
      ...during("ImageRefreshNoRecentSuccess", [121, 177], [api.labels]),
    ],
  };
};

const buildRefused = (): Case => {
  const scrape = { every: 1, until: 120 };
  const at = ticks(0, 120);
  const labels = { ...api.labels, ...api.exporter, ...API };
  return {
    name: "BuildRefused: a new build without a good signature from 10 to 55, then a signed one rolls out at 60",
    scrape,
    series: [
      ...tickCounters(api, { noop: [0, 5, ...ticks(65, 120)], held: ticks(10, 55), refreshed: [60] }, scrape),
      ...imageGauges(api, API, at, () => ({ in_sync: 1, verified: true }), scrape),
      gauge(
        "image_refresh_build_refused",
        labels,
        at.map((t) => [t, t >= 10 && t <= 55 ? 1 : 0]),
        scrape,
      ),
    ],
    expect: [
      ...during("ImageRefreshBuildRefused", [9, 61], []),
      ...during("ImageRefreshBuildRefused", [10, 59], [{ ...api.labels, ...API }]),
    ],
  };
};

export const MINUTES: Case[] = [
  jobFails(),
  lockoutFailsJobs(),
  oneStopsAmongHealthy(),
  stopsWhileLockedOut(),
  neverSucceeded(),
  perImage(),
  notInSync(),
  buildRefused(),
  cronJobStopsBeingScheduled(),
  cronJobNeverScheduled(),
  cronJobSuspended(),
  nothingAtAll(),
];

const DAY = 24 * 60;

const daysLater = (): Case => {
  const scrape = { every: 5, until: 8 * DAY };
  const failing = ticks(5, 8 * DAY);
  const stopped = ticks(0, 60);
  return {
    name: "days later: failing since a success, a stopped locked-out CronJob, an image never verified again",
    scrape,
    series: [
      ...tickCounters(api, { recorded: [0], failed: failing }, scrape),
      gauge(
        "image_refresh_last_success_timestamp_seconds",
        { ...api.labels, ...api.exporter },
        [[0, 0]],
        scrape,
      ),
      ...imageGauges(
        api,
        API,
        [0, ...failing],
        (t) => (t === 0 ? { in_sync: 1, verified: true } : {}),
        scrape,
      ),
      // Locked out (exit 0, so a success) until its CronJob stops at 60.
      ...tickCounters(agents, { locked_out: stopped }, scrape),
      ...imageGauges(agents, NODE_AGENT, stopped, () => ({ locked_out: 1 }), scrape),
      gauge(
        "image_refresh_last_success_timestamp_seconds",
        { ...agents.labels, ...agents.exporter },
        stopped.map((t) => [t, t * 60]),
        scrape,
      ),
    ],
    expect: [
      // Past the 1d window that used to empty, and past the 7d look-back of the success.
      ...during(
        "ImageRefreshNoRecentSuccess",
        [DAY + 60, 3 * DAY, 7 * DAY + 10, 7 * DAY + 130],
        [agents.labels, api.labels],
      ),
      ...during(
        "ImageRefreshNotVerified",
        [DAY + 60, 3 * DAY],
        [
          { ...api.labels, ...API },
          { ...agents.labels, ...NODE_AGENT },
        ],
      ),
      // Eight days after its last tick, the stopped installation is forgotten.
      ...during("ImageRefreshNoRecentSuccess", [8 * DAY], [api.labels]),
      ...during("ImageRefreshNotVerified", [8 * DAY], [{ ...api.labels, ...API }]),
      ...during("ImageRefreshLockedOut", [DAY - 10, DAY + 110], [{ ...agents.labels, ...NODE_AGENT }]),
      // The lockout's day is over; NoTicks still says the CronJob stopped.
      ...during("ImageRefreshLockedOut", [DAY + 130], []),
      ...during("ImageRefreshNoTicks", [DAY + 60, 3 * DAY, 6 * DAY], [agents.labels]),
      ...during("ImageRefreshNoTicks", [8 * DAY], []),
    ],
  };
};

export const DAYS: Case[] = [daysLater()];
