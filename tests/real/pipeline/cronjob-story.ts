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

export async function playStory(api: Api, mon: Monitor): Promise<Timeline> {
  const kubelet = jobKubelet(api);
  const t: Timeline = {
    created: ms((await cronJob(api)).metadata.creationTimestamp) as number,
    at: Object.fromEntries(MARKS.map((m) => [m, Number.NaN])) as Record<Mark, number>,
    jobs: new Map(),
  };
  let failing = false;
  let ticking = false;
  let n = 0;
  let stopped = false;
  const ticks = (async () => {
    while (!stopped) {
      const start = Date.now();
      if (ticking) {
        const name = await scheduleOnce(api, n++);
        if (name) kubelet.exitCode.set(name, failing ? 1 : 0);
      }
      await record(api, t, kubelet.exitCode).catch(() => undefined);
      await Bun.sleep(Math.max(0, minutes(5) - (Date.now() - start)));
    }
  })();
  const status = async () => (await cronJob(api)).status ?? {};
  const wait = (alert: string, ms: number, since = t.created) => mon.waitFor(alert, named(alert), ms, since);
  const gone = (alert: string, ms: number, since: number) =>
    mon.waitGone(`${alert} to resolve`, named(alert), ms, since);
  try {
    // A: created, never scheduled.
    t.at.notScheduledA = await wait("ImageRefreshCronJobNotScheduled", minutes(30) + SLACK * 3);
    // B: every tick fails.
    failing = true;
    ticking = true;
    t.at.firstSchedule = await until(async () => ms((await status()).lastScheduleTime));
    t.at.notScheduledGoneA = await gone("ImageRefreshCronJobNotScheduled", minutes(10), t.at.firstSchedule);
    t.at.noSuccessB = await wait(
      "ImageRefreshCronJobNoSuccess",
      t.created + minutes(120) + SLACK * 3 - Date.now(),
    );
    // C: every tick succeeds.
    failing = false;
    t.at.firstSuccess = await until(async () => ms((await status()).lastSuccessfulTime));
    t.at.noSuccessGoneB = await gone("ImageRefreshCronJobNoSuccess", minutes(10), t.at.firstSuccess);
    t.at.lastFailedB = lastFailedStart(t);
    // Gone from now on (the resolution's moment is read back from the monitor's history).
    t.at.tickFailedGoneB = await gone("ImageRefreshTickFailed", minutes(90), Date.now());
    t.at.healthyFrom = Date.now();
    await Bun.sleep(minutes(20));
    t.at.healthyTo = Date.now();
    // D: an hour of failures, then suspended. The last success is read once the first failed
    // Job is done: a Job scheduled as a success just before may still have been running.
    failing = true;
    const d = Date.now();
    await until(async () => [...t.jobs.values()].find((j) => j.exitCode !== 0 && j.start >= d - 1000)?.start);
    t.at.lastSuccessD = ms((await status()).lastSuccessfulTime) as number;
    await Bun.sleep(minutes(60));
    await setSuspend(api, true);
    t.at.suspended = Date.now();
    t.at.lastScheduleD = ms((await status()).lastScheduleTime) as number;
    t.at.notScheduledD = await wait(
      "ImageRefreshCronJobNotScheduled",
      minutes(30) + SLACK * 3,
      t.at.suspended,
    );
    t.at.noSuccessD = await wait(
      "ImageRefreshCronJobNoSuccess",
      t.at.lastSuccessD + minutes(120) + SLACK * 3 - Date.now(),
      t.at.lastSuccessD,
    );
    t.at.lastFailedD = lastFailedStart(t);
    // E: resumed, ticks succeed.
    failing = false;
    await setSuspend(api, false);
    t.at.resumed = Date.now();
    t.at.scheduleE = await until(async () =>
      after(ms((await status()).lastScheduleTime), t.at.resumed - 1000),
    );
    t.at.successE = await until(async () =>
      after(ms((await status()).lastSuccessfulTime), t.at.resumed - 1000),
    );
    t.at.notScheduledGoneE = await gone("ImageRefreshCronJobNotScheduled", minutes(10), t.at.scheduleE);
    t.at.noSuccessGoneE = await gone("ImageRefreshCronJobNoSuccess", minutes(10), t.at.successE);
    t.at.tickFailedGoneD = await gone("ImageRefreshTickFailed", minutes(90), Date.now());
    t.at.end = Date.now();
  } finally {
    stopped = true;
    await ticks;
    await kubelet.stop();
  }
  return t;
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
