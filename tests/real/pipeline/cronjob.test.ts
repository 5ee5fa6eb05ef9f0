// The image-refresh-cronjob alerts (TickFailed, CronJobNoSuccess, CronJobNotScheduled) on real
// series: the shipped CronJob on the real control plane (cronjob.ts: what is real, what the test
// writes), the real kube-state-metrics watching it, the pipeline's real Prometheus scraping it as
// job="kube-state-metrics" with the shipped rules, every interval divided by FACTOR (compress.ts).
// Each alert fires within the time its text promises (not earlier), names the CronJob or the Job,
// resolves once the cause is gone, and nothing fires while the CronJob is healthy.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type KsmShape, readKsmCapture, shapeKey } from "../../../k8s/monitoring/ksm-shapes.ts";
import { type ControlPlane, startControlPlane } from "../control-plane.ts";
import { needPeers as needRealPeers } from "../peers.ts";
import { shapesNow } from "./capture-ksm.ts";
import { FACTOR, minutes } from "./compress.ts";
import { applyBase, jobStates, NAME, NS } from "./cronjob.ts";
import { GROUP, playStory, SLACK, type Timeline } from "./cronjob-story.ts";
import { type Ksm, startKsm } from "./ksm.ts";
import { firedBetween, type Monitor, monitor, type Seen } from "./monitor.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const FILE = "tests/real/pipeline/cronjob.test.ts";
const peers = needPeers(FILE, { binary: false });
const missingReal = needRealPeers(["kube", "ksm"], FILE);

let cp: ControlPlane;
let ksm: Ksm;
let p: Pipeline;
let mon: Monitor;
let t: Timeline;
let failure: string | undefined;
let live: KsmShape[] = [];
/** Scrapes of kube-state-metrics that failed during the story (each resolves its alerts for a while). */
let missed = "unknown";

type Alert = Seen["firing"][number];
const firing = (name: string, from: number, to = Number.POSITIVE_INFINITY, pred = (_: Alert) => true) =>
  mon.seen.filter(
    (s) => s.t >= from && s.t < to && s.firing.some((a) => a.labels.alertname === name && pred(a)),
  );
/** The first sample after the last one in [from, to) where `name` fired: when it resolved. */
function resolvedAt(name: string, from: number, to: number): number {
  const last = firing(name, from, to).at(-1)?.t ?? from;
  return mon.seen.find((s) => s.t > last)?.t ?? Number.NaN;
}
const realMinutes = (x: number) => `${(x / minutes(1)).toFixed(1)} min`;
/** x within the promise (compressed ms) give or take SLACK. */
const within = (x: number, promise: number) => ({
  ok: x >= promise - SLACK && x <= promise + SLACK,
  real: realMinutes(x),
  promised: realMinutes(promise),
});

describe.skipIf(!peers || missingReal)(
  `the CronJob alerts on real kube-state-metrics (time compressed ${FACTOR}x)`,
  () => {
    beforeAll(async () => {
      if (!peers) return;
      cp = await startControlPlane({ hardLimitS: 900 });
      await applyBase(cp.admin);
      ksm = await startKsm(cp.adminKubeconfig, cp.dir, NS);
      p = await startPipeline(peers, [{ job: "kube-state-metrics", target: ksm.target }]);
      mon = monitor(p);
      try {
        t = await playStory(cp.admin, mon);
        live = await shapesNow(p, await jobStates(cp.admin));
      } catch (err) {
        failure = (err as Error).message;
      }
      missed = await missedScrapes(Date.now() - (t?.created ?? Date.now())).catch((e) => `unknown (${e})`);
      report();
    }, 480_000);

    afterAll(async () => {
      await mon?.stop();
      await p?.stop();
      await ksm?.peer.stop();
      await cp?.stop();
    });

    test("the story ran to its end", () => {
      expect(failure).toBeUndefined();
    });

    test("NotScheduled: 30 minutes after creation when never scheduled; resolves with the first schedule", () => {
      expect(within(t.at.notScheduledA - t.created, minutes(30))).toMatchObject({ ok: true });
      expect(t.at.notScheduledGoneA - t.at.firstSchedule).toBeLessThanOrEqual(SLACK);
    });

    test("NoSuccess: 2 hours after creation when it never succeeded; resolves with the first success", () => {
      expect(within(t.at.noSuccessB - t.created, minutes(120))).toMatchObject({ ok: true });
      expect(t.at.noSuccessGoneB - t.at.firstSuccess).toBeLessThanOrEqual(SLACK);
    });

    test("TickFailed: every failed Job, named, as it fails; never a Job that succeeded", () => {
      const failed = [...t.jobs.values()].filter((j) => j.exitCode !== 0);
      expect(failed.length).toBeGreaterThan(10);
      for (const j of failed) {
        const of = (a: Alert) => a.labels.job_name === j.name;
        const at = firing("ImageRefreshTickFailed", j.start, Number.POSITIVE_INFINITY, of)[0];
        const alert = at?.firing.find((a) => a.labels.alertname === "ImageRefreshTickFailed" && of(a));
        expect({ job: j.name, late: (at?.t ?? Number.NaN) - (j.finished ?? j.start) <= SLACK }).toEqual({
          job: j.name,
          late: true,
        });
        expect(alert?.labels).toMatchObject({ namespace: NS, job_name: j.name, job: "kube-state-metrics" });
        expect(alert?.annotations.summary).toContain(j.name);
      }
      const ok = new Set([...t.jobs.values()].filter((j) => j.exitCode === 0).map((j) => j.name));
      const named = mon.seen
        .flatMap((s) => s.firing)
        .filter((a) => a.labels.alertname === "ImageRefreshTickFailed");
      expect(named.filter((a) => ok.has(a.labels.job_name ?? ""))).toEqual([]);
    });

    test("TickFailed resolves an hour after the last failed Job started", () => {
      const b = resolvedAt("ImageRefreshTickFailed", t.at.lastFailedB, t.at.healthyTo);
      expect(within(b - t.at.lastFailedB, minutes(60))).toMatchObject({ ok: true });
      const d = resolvedAt("ImageRefreshTickFailed", t.at.lastFailedD, t.at.end);
      expect(within(d - t.at.lastFailedD, minutes(60))).toMatchObject({ ok: true });
    });

    test("nothing fires on the healthy CronJob (older than 2 hours, ticking, succeeding)", () => {
      expect(t.at.healthyFrom - t.created).toBeGreaterThan(minutes(120));
      // Each one named with when it was first seen in the window: after healthyFrom, in real minutes.
      const raised = firedBetween(mon.seen, t.at.healthyFrom, t.at.healthyTo)
        .filter((a) => GROUP.some((g) => a.startsWith(`${g}{`)))
        .map((a) => {
          const first = mon.seen.find(
            (s) => s.t >= t.at.healthyFrom && firedBetween([s], s.t, s.t + 1).includes(a),
          );
          return `${a} from +${realMinutes((first?.t ?? Number.NaN) - t.at.healthyFrom)}`;
        });
      expect(raised).toEqual([]);
      // NoSuccess and NotScheduled stay quiet from the first success to the next failures.
      for (const g of GROUP.slice(1)) expect(firing(g, t.at.noSuccessGoneB, t.at.healthyTo)).toEqual([]);
    });

    test("after a success, 2 hours of failures raise NoSuccess; suspended, NotScheduled after 30 minutes", () => {
      expect(within(t.at.noSuccessD - t.at.lastSuccessD, minutes(120))).toMatchObject({ ok: true });
      expect(within(t.at.notScheduledD - t.at.lastScheduleD, minutes(30))).toMatchObject({ ok: true });
    });

    test("resumed: NotScheduled and NoSuccess resolve with the first schedule and success", () => {
      expect(t.at.notScheduledGoneE - t.at.scheduleE).toBeLessThanOrEqual(SLACK);
      expect(t.at.noSuccessGoneE - t.at.successE).toBeLessThanOrEqual(SLACK);
    });

    test("TickFailed carries the reason kube-state-metrics gives: the pod failed (backoffLimit 0)", () => {
      const reasons = new Set(
        mon.seen
          .flatMap((s) => s.firing)
          .filter((a) => a.labels.alertname === "ImageRefreshTickFailed")
          .map((a) => a.labels.reason),
      );
      expect([...reasons]).toEqual(["BackoffLimitExceeded"]);
    });

    test("the committed capture (captured-ksm.json) holds the series kube-state-metrics gives now", () => {
      const committed = new Map(
        readKsmCapture().shapes.map((s) => [`${shapeKey(s.metric, s.labels)} ${s.state ?? ""}`, s.values]),
      );
      expect(live.length).toBeGreaterThan(8);
      const odd = live.filter((s) => {
        const values = committed.get(`${shapeKey(s.metric, s.labels)} ${s.state ?? ""}`);
        return !values || s.values.some((v) => !values.includes(v));
      });
      expect(odd).toEqual([]);
    });

    test("the CronJob alerts name the CronJob", () => {
      for (const g of GROUP.slice(1)) {
        const a = mon.seen.flatMap((s) => s.firing).find((x) => x.labels.alertname === g);
        expect(a?.labels).toMatchObject({ namespace: NS, cronjob: NAME, job: "kube-state-metrics" });
        expect(a?.annotations.summary).toContain(`CronJob ${NAME}`);
      }
    });
  },
);

async function missedScrapes(sinceMs: number): Promise<string> {
  const r = `${Math.ceil(sinceMs / 1000) + 1}s`;
  const up = 'up{job="kube-state-metrics"}';
  const [v] = await p.query(`count_over_time(${up}[${r}]) - sum_over_time(${up}[${r}])`);
  return String((v?.value as [number, string] | undefined)?.[1] ?? "none recorded");
}

function report() {
  console.log(`kube-state-metrics scrapes that failed during the story: ${missed}`);
  if (!t) return;
  const r = (x: number | undefined, from: number) => (x === undefined ? "never" : realMinutes(x - from));
  console.log(
    [
      `NotScheduled fired ${r(t.at.notScheduledA, t.created)} after creation (never scheduled), ${r(t.at.notScheduledD, t.at.lastScheduleD)} after the last schedule (suspended)`,
      `NoSuccess fired ${r(t.at.noSuccessB, t.created)} after creation (never succeeded), ${r(t.at.noSuccessD, t.at.lastSuccessD)} after the last success`,
      `TickFailed resolved ${r(mon && resolvedAt("ImageRefreshTickFailed", t.at.lastFailedB, t.at.healthyTo), t.at.lastFailedB)} and ${r(mon && resolvedAt("ImageRefreshTickFailed", t.at.lastFailedD, t.at.end), t.at.lastFailedD)} after the last failed Job started; ${[...t.jobs.values()].filter((j) => j.exitCode).length} Jobs failed, ${[...t.jobs.values()].filter((j) => !j.exitCode).length} succeeded`,
    ].join("\n"),
  );
}
