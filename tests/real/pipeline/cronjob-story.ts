// The story of the shipped CronJob that the image-refresh-cronjob alerts are proved on, phase by
// phase, on the real control plane (cronjob.ts says what is real and what the test writes). All
// times are what Kubernetes recorded (whole seconds, in ms here): the rules compare time() with
// exactly those, so a promise is measured from them.
//   A  created, never scheduled: NotScheduled fires 30 minutes after creation;
//   B  then every tick fails: NotScheduled resolves with the first schedule, TickFailed fires for
//      each failed Job, NoSuccess fires 2 hours after creation (it never succeeded);
//   C  then every tick succeeds: NoSuccess resolves with the first success, TickFailed an hour
//      after the last failed Job started; then 20 healthy minutes in which nothing fires;
//   D  then every tick fails for an hour and the CronJob is suspended: NotScheduled fires 30
//      minutes after the last schedule, NoSuccess 2 hours after the last success;
//   E  resumed, ticks succeed: every alert resolves.
import type { Api } from "../api.ts";
import { minutes } from "./compress.ts";
import { cronJob, jobKubelet, jobs, scheduleOnce, setSuspend } from "./cronjob.ts";
import type { Monitor } from "./monitor.ts";

export const GROUP = [
  "ImageRefreshTickFailed",
  "ImageRefreshCronJobNoSuccess",
  "ImageRefreshCronJobNotScheduled",
];
/** Scrape + evaluation + a Job's own time + polling, under load: 4 real minutes, as alerts.test.ts. */
export const SLACK = minutes(4);
/**
 * How long an alert must stay away before the story counts it gone: a scrape of
 * kube-state-metrics that misses its (compressed, 0.5 s) timeout under load marks its series
 * stale, so the alert resolves for an evaluation or two and then fires again.
 */
export const HOLD = minutes(3);

export interface JobSeen {
  name: string;
  exitCode: number;
  start: number;
  /** When the Job controller wrote Failed or Complete. */
  finished?: number;
}

const MARKS = [
  "end",
  "firstSchedule",
  "firstSuccess",
  "healthyFrom",
  "healthyTo",
  "lastFailedB",
  "lastFailedD",
  "lastScheduleD",
  "lastSuccessD",
  "noSuccessB",
  "noSuccessD",
  "noSuccessGoneB",
  "noSuccessGoneE",
  "notScheduledA",
  "notScheduledD",
  "notScheduledGoneA",
  "notScheduledGoneE",
  "resumed",
  "scheduleE",
  "successE",
  "suspended",
  "tickFailedGoneB",
  "tickFailedGoneD",
] as const;
export type Mark = (typeof MARKS)[number];

export interface Timeline {
  created: number;
  /** When each phase changed and each wait ended (ms), for the report and the assertions. */
  at: Record<Mark, number>;
  jobs: Map<string, JobSeen>;
}

const ms = (t?: string) => (t ? Date.parse(t) : undefined);
const named = (name: string) => (a: { labels: Record<string, string> }) => a.labels.alertname === name;

/** What the phases share: the API, the monitor, the timeline and the schedule's two switches. */
interface Ctx {
  api: Api;
  mon: Monitor;
  t: Timeline;
  sched: { ticking: boolean; failing: boolean };
}

export async function playStory(api: Api, mon: Monitor): Promise<Timeline> {
  const kubelet = jobKubelet(api);
  const t: Timeline = {
    created: ms((await cronJob(api)).metadata.creationTimestamp) as number,
    at: Object.fromEntries(MARKS.map((m) => [m, Number.NaN])) as Record<Mark, number>,
    jobs: new Map(),
  };
  const c: Ctx = { api, mon, t, sched: { ticking: false, failing: false } };
  let stopped = false;
  const ticks = (async () => {
    for (let n = 0; !stopped; ) {
      const start = Date.now();
      if (c.sched.ticking) {
        const name = await scheduleOnce(api, n++);
        if (name) kubelet.exitCode.set(name, c.sched.failing ? 1 : 0);
      }
      await record(api, t, kubelet.exitCode).catch(() => undefined);
      await Bun.sleep(Math.max(0, minutes(5) - (Date.now() - start)));
    }
  })();
  try {
    for (const phase of [neverThenFailing, succeeding, failingThenSuspended, resumed]) await phase(c);
  } finally {
    stopped = true;
    await ticks;
    await kubelet.stop();
  }
  return t;
}

const status = async (c: Ctx) => (await cronJob(c.api)).status ?? {};
const wait = (c: Ctx, alert: string, ms: number, since = c.t.created) =>
  c.mon.waitFor(alert, named(alert), ms, since);
const gone = (c: Ctx, alert: string, ms: number, since: number) =>
  c.mon.waitGone(`${alert} to resolve`, named(alert), ms, since, HOLD);

/** A: created, never scheduled; B: every tick fails. */
async function neverThenFailing(c: Ctx) {
  const at = c.t.at;
  at.notScheduledA = await wait(c, "ImageRefreshCronJobNotScheduled", minutes(30) + SLACK * 3);
  c.sched.failing = true;
  c.sched.ticking = true;
  at.firstSchedule = await until(async () => ms((await status(c)).lastScheduleTime));
  at.notScheduledGoneA = await gone(c, "ImageRefreshCronJobNotScheduled", minutes(10), at.firstSchedule);
  const left = c.t.created + minutes(120) + SLACK * 3 - Date.now();
  at.noSuccessB = await wait(c, "ImageRefreshCronJobNoSuccess", left);
}

/** C: every tick succeeds; once TickFailed is gone, 20 healthy minutes. */
async function succeeding(c: Ctx) {
  const at = c.t.at;
  c.sched.failing = false;
  at.firstSuccess = await until(async () => ms((await status(c)).lastSuccessfulTime));
  at.noSuccessGoneB = await gone(c, "ImageRefreshCronJobNoSuccess", minutes(10), at.firstSuccess);
  at.lastFailedB = lastFailedStart(c.t);
  // Gone from now on (the resolution's moment is read back from the monitor's history).
  at.tickFailedGoneB = await gone(c, "ImageRefreshTickFailed", minutes(90), Date.now());
  at.healthyFrom = Date.now();
  await Bun.sleep(minutes(20));
  at.healthyTo = Date.now();
}

/**
 * D: an hour of failures, then suspended. The last success is read once the first failed Job
 * is done: a Job scheduled as a success just before may still have been running.
 */
async function failingThenSuspended(c: Ctx) {
  const at = c.t.at;
  c.sched.failing = true;
  const d = Date.now();
  await until(async () => [...c.t.jobs.values()].find((j) => j.exitCode !== 0 && j.start >= d - 1000)?.start);
  at.lastSuccessD = ms((await status(c)).lastSuccessfulTime) as number;
  await Bun.sleep(minutes(60));
  await setSuspend(c.api, true);
  at.suspended = Date.now();
  at.lastScheduleD = ms((await status(c)).lastScheduleTime) as number;
  at.notScheduledD = await wait(c, "ImageRefreshCronJobNotScheduled", minutes(30) + SLACK * 3, at.suspended);
  const left = at.lastSuccessD + minutes(120) + SLACK * 3 - Date.now();
  at.noSuccessD = await wait(c, "ImageRefreshCronJobNoSuccess", left, at.lastSuccessD);
  at.lastFailedD = lastFailedStart(c.t);
}

/** E: resumed, ticks succeed; every alert resolves. */
async function resumed(c: Ctx) {
  const at = c.t.at;
  c.sched.failing = false;
  await setSuspend(c.api, false);
  at.resumed = Date.now();
  const since = at.resumed - 1000;
  at.scheduleE = await until(async () => after(ms((await status(c)).lastScheduleTime), since));
  at.successE = await until(async () => after(ms((await status(c)).lastSuccessfulTime), since));
  at.notScheduledGoneE = await gone(c, "ImageRefreshCronJobNotScheduled", minutes(10), at.scheduleE);
  at.noSuccessGoneE = await gone(c, "ImageRefreshCronJobNoSuccess", minutes(10), at.successE);
  at.tickFailedGoneD = await gone(c, "ImageRefreshTickFailed", minutes(90), Date.now());
  at.end = Date.now();
}

const after = (x: number | undefined, t: number) => (x !== undefined && x >= t ? x : undefined);

async function until(get: () => Promise<number | undefined>, ms = minutes(30)): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms`);
    await Bun.sleep(50);
  }
}

function lastFailedStart(t: Timeline): number {
  const failed = [...t.jobs.values()].filter((j) => j.exitCode !== 0);
  return Math.max(...failed.map((j) => j.start));
}

/** Every Job of the CronJob the API still holds: its start and finish, kept after it is deleted. */
async function record(api: Api, t: Timeline, codes: Map<string, number>): Promise<void> {
  for (const j of await jobs(api)) {
    const name = j.metadata.name as string;
    const start = ms(j.status?.startTime);
    const code = codes.get(name);
    if (start === undefined || code === undefined) continue;
    const done = (j.status?.conditions ?? []).find(
      (c: { type: string; status: string }) =>
        (c.type === "Failed" || c.type === "Complete") && c.status === "True",
    );
    t.jobs.set(name, { name, exitCode: code, start, finished: ms(done?.lastTransitionTime) });
  }
}
