// What reaches a human: the on-call path on real peers. The compiled binary ticks a simulated
// cluster on a compressed schedule, exporting to the real Collector; each tick is also a Job of
// k8s/base's CronJob on the real control plane, ending with that tick's exit code (cronjob.ts);
// the real kube-state-metrics watches them; the real Prometheus evaluates the rules rendered for
// that installation (its CronJob, its store, as the chart renders them) and sends its alerts to a
// real Alertmanager (built from peers/alertmanager) run with k8s/monitoring/alertmanager.yaml,
// which notifies a webhook receiver.
// The story: two images' new builds fail their rollouts three times and are locked out, stay
// locked out, and a rearm (with the fault gone) refreshes them. The receiver must get one firing
// and one resolved notification per image, the failed Jobs' generic alert must be held back
// while the lockout alert fires, and must have reached the receiver before the lockout (it is real).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { RULES_PATH } from "../../../k8s/monitoring/generate.ts";
import { renderRules } from "../../../k8s/monitoring/install.ts";
import { type ControlPlane, startControlPlane } from "../control-plane.ts";
import { needPeers as needRealPeers, peer } from "../peers.ts";
import { type Alertmanager, type AmAlert, type Notification, startAlertmanager } from "./alertmanager.ts";
import { FACTOR, minutes, ms, REAL } from "./compress.ts";
import { applyBase, type JobKubelet, jobKubelet, NAME, NS, scheduleOnce } from "./cronjob.ts";
import { installationText } from "./identity.ts";
import { type Installation, startInstallation } from "./installations.ts";
import { type Ksm, startKsm } from "./ksm.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const FILE = "tests/real/pipeline/alertmanager.test.ts";
const peers = needPeers(FILE);
const missingReal = needRealPeers(["kube", "ksm", "alertmanager"], FILE);
const skip = !peers || missingReal;

/** Its store is k8s/base's: image-refresh/image-refresh-state, the CronJob's own. */
const INSTALLATION = "image-refresh";
const IMAGES = ["api", "node-agent"];
const WORKLOADS: Record<string, Array<[string, string, string]>> = {
  api: [
    ["Deployment", "apps", "api"],
    ["Deployment", "apps", "api-proxy"],
  ],
  "node-agent": [["DaemonSet", "agents", "node-agent"]],
};
const REPOSITORY: Record<string, string> = { api: "myorg/api", "node-agent": "myorg/node-agent" };
/** Bad builds before tick 2; locked out from tick 4; fixed and rearmed before tick 11 at the earliest. */
const BAD = 2;
const REARM = 11;
const TICKS = 15;
/** The latest tick the rearm may wait for (see rearmDue). */
const MAX_REARM = 20;
/** Scrape + evaluation + Alertmanager's group wait + a tick's own time, under load. */
const SLACK = minutes(4);

let cp: ControlPlane;
let ksm: Ksm;
let kubelet: JobKubelet;
let p: Pipeline;
let am: Alertmanager;
let inst: Installation;
const marks: Record<string, number> = {};
/** Per tick: its Job, its exit code, when it started. */
const ticks: Array<{ n: number; job?: string; code: number; start: number }> = [];
/** Alertmanager's own view, sampled while the story runs. */
const amSeen: Array<{ t: number; alerts: AmAlert[] }> = [];
let failure: string | undefined;

function setFault(i: Installation, bad: boolean) {
  for (const image of IMAGES) {
    const refs = bad
      ? [
          `${i.world.registry.host}/${REPOSITORY[image]}@${i.world.registry.push(REPOSITORY[image] as string, "stable", { multiArch: true })}`,
        ]
      : [];
    for (const [kind, ns, name] of WORKLOADS[image] ?? [])
      i.world.api.failImages(kind as "Deployment", ns, name, refs);
  }
}

/** One schedule: the Job on the real control plane, the tick on the simulated cluster, the Job ends with its code. */
async function tickOnce(n: number) {
  const start = Date.now();
  let job: string | undefined;
  // The previous Job must have left status.active (concurrencyPolicy: Forbid), as the controller would wait.
  for (let k = 0; k < 40 && job === undefined; k++) {
    job = await scheduleOnce(cp.admin, n);
    if (job === undefined) await Bun.sleep(100);
  }
  const r = await inst.command(["tick"]);
  if (job) kubelet.exitCode.set(job, r.code);
  ticks.push({ n, job, code: r.code, start });
}

/**
 * The rearm waits for both lockouts' notifications and then a quiet stretch of 10 minutes past
 * SLACK, so the inhibition is watched for as long under load (a late evaluation) as on an idle
 * machine; a story whose lockouts never notify still ends, and its tests say so.
 */
function rearmDue(n: number): boolean {
  if (n < REARM) return false;
  const locks = am.notifications.filter((x) => lockedOut(x) && x.status === "firing");
  const both = IMAGES.every((i) => locks.some(ofImage(i)));
  const last = Math.max(...locks.map((x) => x.at));
  return n >= MAX_REARM || (both && Date.now() - last > SLACK + minutes(10.5));
}

async function story() {
  const every = ms(REAL.tick);
  const t0 = Date.now();
  let after = -1;
  for (let n = 0; after < TICKS - REARM; n++) {
    if (n === BAD) setFault(inst, true);
    if (after < 0 && rearmDue(n)) {
      setFault(inst, false);
      marks.rearm = Date.now();
      marks.rearmTick = n;
      const r = await inst.command(["rearm"]);
      if (r.code !== 0) throw new Error(`rearm exited ${r.code}: ${r.stderr}`);
    }
    if (marks.rearm !== undefined) after++;
    await tickOnce(n);
    await Bun.sleep(Math.max(0, t0 + (n + 1) * every - Date.now()));
  }
}

const lockedOut = (x: Notification) => x.groupLabels.alertname === "ImageRefreshLockedOut";
const tickFailed = (x: Notification) => x.groupLabels.alertname === "ImageRefreshTickFailed";
const ofImage = (image: string) => (x: Notification) => x.groupLabels.image_refresh_image === image;

describe.skipIf(skip)(`notifications through a real Alertmanager (time compressed ${FACTOR}x)`, () => {
  beforeAll(async () => {
    if (skip || !peers) return;
    cp = await startControlPlane({ hardLimitS: 900 });
    await applyBase(cp.admin);
    ksm = await startKsm(cp.adminKubeconfig, cp.dir, NS);
    kubelet = jobKubelet(cp.admin);
    am = await startAlertmanager(peer("alertmanager", "alertmanager"));
    // The rules as the chart renders them for this CronJob and its store.
    const rules = renderRules(readFileSync(RULES_PATH, "utf8"), {
      namespace: NS,
      cronjob: NAME,
      installation: installationText(INSTALLATION),
      runbook: "https://git.example/acme/image-refresh/docs/on-call.md",
    });
    p = await startPipeline(peers, [{ job: "kube-state-metrics", target: ksm.target }], {
      rules,
      alertmanager: am.target,
    });
    inst = await startInstallation(INSTALLATION, "http/protobuf", () => p.otlpUrl);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const alerts = await am.alerts().catch(() => undefined);
        if (alerts) amSeen.push({ t: Date.now(), alerts });
        await Bun.sleep(200);
      }
    })();
    try {
      await story();
      // The lockout resolves with the first tick after the rearm; its notification follows.
      const deadline = Date.now() + SLACK * 2;
      const resolvedAll = () =>
        IMAGES.every((img) =>
          am.notifications.some((x) => lockedOut(x) && ofImage(img)(x) && x.status === "resolved"),
        );
      while (!resolvedAll() && Date.now() < deadline) await Bun.sleep(100);
    } catch (err) {
      failure = (err as Error).message;
    } finally {
      sampling = false;
      await sampler;
    }
    const m = (t: number) => `${((t - (marks.rearm ?? 0)) / minutes(1)).toFixed(1)} min`;
    for (const x of am.notifications)
      console.log(
        `${m(x.at)} after the rearm: ${x.status} ${JSON.stringify(x.groupLabels)} (${x.alerts.length} alerts)`,
      );
  }, 300_000);

  afterAll(async () => {
    await kubelet?.stop();
    await inst?.world.stop();
    await p?.stop();
    await am?.stop();
    await ksm?.peer.stop();
    await cp?.stop();
  });

  test("the story ran: ticks exit 1 from the bad builds to the rearm, 0 before and after", () => {
    expect(failure).toBeUndefined();
    const codes = ticks.map((t) => `${t.n}:${t.code}`);
    expect(codes).toEqual(
      ticks.map((t) => `${t.n}:${t.n >= BAD && t.n < (marks.rearmTick as number) ? 1 : 0}`),
    );
    expect(ticks.every((t) => t.job !== undefined)).toBe(true);
  });

  test.each(IMAGES)(
    "%s: exactly one firing notification for its lockout, with the runbook's anchor",
    (image) => {
      const firing = am.notifications.filter(
        (x) => lockedOut(x) && ofImage(image)(x) && x.status === "firing",
      );
      expect(firing.length).toBe(1);
      const [alert] = firing[0]?.alerts ?? [];
      expect(firing[0]?.alerts.length).toBe(1);
      expect(alert?.labels).toMatchObject({
        image_refresh_installation: installationText(INSTALLATION),
        image_refresh_image: image,
      });
      expect(alert?.annotations.runbook_url).toBe(
        "https://git.example/acme/image-refresh/docs/on-call.md#imagerefreshlockedout",
      );
      expect(firing[0]?.at).toBeLessThan(marks.rearm as number);
    },
  );

  test.each(IMAGES)("%s: exactly one resolved notification, after the rearm", (image) => {
    const resolved = am.notifications.filter(
      (x) => lockedOut(x) && ofImage(image)(x) && x.status === "resolved",
    );
    expect(resolved.length).toBe(1);
    expect(resolved[0]?.at).toBeGreaterThan(marks.rearm as number);
    expect(resolved[0]?.alerts.map((a) => a.status)).toEqual(["resolved"]);
  });

  test("the failed Jobs' alert reached the receiver before the lockout: it is real, and for this installation", () => {
    const firstLock = Math.min(...am.notifications.filter(lockedOut).map((x) => x.at));
    const before = am.notifications.filter((x) => tickFailed(x) && x.status === "firing" && x.at < firstLock);
    expect(before.length).toBeGreaterThan(0);
    expect(before[0]?.groupLabels).toMatchObject({
      image_refresh_installation: installationText(INSTALLATION),
    });
  });

  test("while the lockout alert fires, the failed Jobs' alert is inhibited: Alertmanager holds it back, the receiver gets none", () => {
    const locked = Math.max(
      ...am.notifications.filter((x) => lockedOut(x) && x.status === "firing").map((x) => x.at),
    );
    const from = locked + SLACK;
    const to = marks.rearm as number;
    expect(to - from).toBeGreaterThan(minutes(10));
    const during = am.notifications.filter(
      (x) => tickFailed(x) && x.status === "firing" && x.at >= from && x.at < to,
    );
    expect(during.map((x) => x.alerts.map((a) => a.labels.job_name))).toEqual([]);
    // Jobs of locked-out ticks failed and their alerts were there, suppressed by the lockout's.
    const lockedJobs = new Set(
      ticks.filter((t) => t.n > BAD + 2 && t.n < (marks.rearmTick as number)).map((t) => t.job),
    );
    const held = amSeen
      .filter((s) => s.t >= from && s.t < to)
      .flatMap((s) => s.alerts)
      .filter((a) => a.labels.alertname === "ImageRefreshTickFailed" && lockedJobs.has(a.labels.job_name));
    expect(held.length).toBeGreaterThan(0);
    expect(held.filter((a) => a.status.state !== "suppressed" || a.status.inhibitedBy.length === 0)).toEqual(
      [],
    );
  });

  test("nothing else was notified: no duplicate group, no other alert", () => {
    const names = new Set(am.notifications.map((x) => x.groupLabels.alertname));
    expect([...names].sort()).toEqual(["ImageRefreshLockedOut", "ImageRefreshTickFailed"]);
    const lockGroups = am.notifications
      .filter(lockedOut)
      .map((x) => `${x.groupLabels.image_refresh_image} ${x.status}`);
    expect(lockGroups.sort()).toEqual(IMAGES.flatMap((i) => [`${i} firing`, `${i} resolved`]).sort());
  });
});
