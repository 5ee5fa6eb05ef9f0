// The shipped alerts on the real pipeline: the compiled binary ticks several installations (each
// its own simulated cluster and registry) on a compressed CronJob schedule, exporting to a real
// OpenTelemetry Collector run with k8s/monitoring/otel-collector.yaml; a real Prometheus scrapes
// it with k8s/monitoring/rules.yaml loaded. Every interval is divided by FACTOR (compress.ts).
// Each story's alert must fire within the time its text promises (not earlier), name the
// installation and the image, and resolve once the cause is gone; the healthy installations
// raise nothing. Then the Collector goes away (telemetry lost) and comes back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FACTOR, minutes } from "./compress.ts";
import { type Dashboard, dashboardProbe, notEvaluated } from "./dashboard.ts";
import { imageLabels, installationLabels, installationText } from "./identity.ts";
import { type Installation, type Schedule, schedule, startInstallation, ticksOf } from "./installations.ts";
import { firedBetween, type Monitor, matches, monitor } from "./monitor.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";
import { type Expectation, HEALTHY, STORIES } from "./stories.ts";

const peers = needPeers("tests/real/pipeline/alerts.test.ts");
/** Scrape + evaluation + the Collector's batch + a tick's own time + polling, under load: 4 real minutes. */
const SLACK = minutes(4);

let p: Pipeline;
let mon: Monitor;
let sched: Schedule | undefined;
let dash: Dashboard;
const inst = new Map<string, Installation>();
const fired = new Map<Expectation, number>();
const resolved = new Map<Expectation, number>();
const failures: string[] = [];
/** Per installation, how many of its expectations have not fired yet. */
const unfired = new Map<string, number>();
const phaseA = { from: 0, to: 0 };
const lost = { at: 0, fired: 0, back: 0, ticked: 0, resolved: 0, quiet: 0, raised: [] as string[] };

const labelsOf = (e: Expectation) => ({
  ...installationLabels(e.installation),
  ...(e.image ? imageLabels(e.image) : {}),
});
const predicate = (e: Expectation) => (a: Parameters<typeof matches>[0]) => matches(a, e.alert, labelsOf(e));
const markOf = async (i: Installation, mark: string, ms: number) => {
  const deadline = Date.now() + ms;
  while (i.marks[mark] === undefined && Date.now() < deadline) await Bun.sleep(50);
  if (i.marks[mark] === undefined) throw new Error(`${i.name}: never reached "${mark}"`);
  return i.marks[mark] as number;
};

/** Waits for an expectation to fire and resolve; `fix` removes the cause once it fired. */
async function play(e: Expectation, fix?: () => void) {
  const i = inst.get(e.installation) as Installation;
  try {
    const from = await markOf(i, e.from, minutes(120));
    // From the tick before the mark: an alert that fires too early is caught by the test below.
    const since = from - minutes(5);
    fired.set(e, await mon.waitFor(e.alert, predicate(e), from + e.promise + SLACK * 3 - Date.now(), since));
    // The cause goes once every alert it should raise has fired (a pause raises three).
    const left = (unfired.get(e.installation) ?? 1) - 1;
    unfired.set(e.installation, left);
    if (left === 0) fix?.();
    const gone = await markOf(i, e.gone, minutes(480));
    resolved.set(e, await mon.waitGone(`${e.alert} to resolve`, predicate(e), minutes(30), gone));
  } catch (err) {
    failures.push(`${e.alert} on ${e.installation}: ${(err as Error).message}`);
  }
}

/** The API serves the installation's store again (its faults cleared). */
function grant(name: string) {
  const i = inst.get(name) as Installation;
  i.world.api.faults.clear();
  i.mark("granted");
}

/** The last log lines of the installation's ticks from the one before `mark` to `until`. */
function ticksSaid(i: Installation, mark: number, until: number) {
  for (const t of ticksOf(i).filter((t) => t.end >= mark - minutes(5) && t.start <= until))
    console.log(`  tick ${t.n} (exit ${t.code}): ${t.stderr.trim().split("\n").slice(-4).join(" | ")}`);
}

/** One line per story: when it fired and resolved, in real minutes after its marks. */
function report() {
  const m = (x: number | undefined) => (x === undefined ? "never" : `${(x / minutes(1)).toFixed(1)} min`);
  for (const e of STORIES.flatMap((s) => s.expect)) {
    const i = inst.get(e.installation) as Installation;
    const f = fired.get(e);
    const r = resolved.get(e);
    const from = i.marks[e.from] as number;
    const gone = i.marks[e.gone] as number;
    console.log(
      `${e.alert} on ${e.installation}: promised ${m(e.promise)}, fired ${m(f && f - from)} after "${e.from}", resolved ${m(r && r - gone)} after "${e.gone}"`,
    );
    // Late to fire or to resolve: what the installation's ticks said from the one before the mark on.
    if (f !== undefined && f - from > e.promise + SLACK) ticksSaid(i, from, f);
    if (r !== undefined && r - gone > SLACK) ticksSaid(i, gone, r);
  }
  console.log(
    `ImageRefreshNoTelemetry: fired ${m(lost.fired - lost.at)} after the Collector stopped, resolved ${m(lost.resolved - lost.ticked)} after the first tick to reach it; all quiet ${m(lost.quiet - lost.back)} after it was back; raised meanwhile: ${lost.raised.join(" ")}`,
  );
}

describe.skipIf(!peers)(`alerts on the real pipeline (time compressed ${FACTOR}x)`, () => {
  beforeAll(async () => {
    if (!peers) return;
    p = await startPipeline(peers);
    const names = [...HEALTHY, ...STORIES.map((s) => s.installation).filter((n) => !HEALTHY.includes(n))];
    for (const [k, name] of names.entries())
      inst.set(name, await startInstallation(name, k % 2 ? "http/json" : "http/protobuf", () => p.otlpUrl));
    for (const s of STORIES) (inst.get(s.installation) as Installation).before = s.before;
    mon = monitor(p);
    dash = dashboardProbe(p);
    phaseA.from = Date.now();
    sched = schedule([...inst.values()]);
    const all = STORIES.flatMap((s) => s.expect);
    for (const e of all) unfired.set(e.installation, (unfired.get(e.installation) ?? 0) + 1);
    const fixes: Record<string, () => void> = {
      stops: () => {
        const i = inst.get("stops") as Installation;
        i.mark("resumed");
        i.active = true;
      },
      paused: () => (inst.get("paused") as Installation).mark("hand back"),
      never: () => grant("never"),
      relapse: () => grant("relapse"),
    };
    await Promise.all(all.map((e) => play(e, fixes[e.installation])));
    await dash.sample();
    dash.stop();
    phaseA.to = Date.now();
    // Telemetry lost: the Collector is gone (Prometheus' scrape fails) while the CronJobs go on.
    lost.at = Date.now();
    await p.stopCollector();
    const noTelemetry = (a: Parameters<typeof matches>[0]) =>
      a.labels.alertname === "ImageRefreshNoTelemetry";
    try {
      lost.fired = await mon.waitFor(
        "ImageRefreshNoTelemetry",
        noTelemetry,
        minutes(30) + SLACK * 3,
        lost.at,
      );
      await p.startCollector();
      lost.back = Date.now();
      lost.resolved = await mon.waitGone(
        "ImageRefreshNoTelemetry to resolve",
        noTelemetry,
        minutes(30),
        lost.back,
      );
      // Every installation ticks again: whatever the outage raised must end with it.
      lost.quiet = await mon.waitGone("every alert to resolve", () => true, minutes(15), lost.back);
      // The cause is gone with the first tick exported to the Collector that is back. A tick that
      // began during the outage may deliver its points on retry once it is back, and the alert may
      // resolve before that tick's process has exited: read the ticks' ends once all is quiet.
      const after = [...inst.values()].flatMap((i) => i.runs).filter((r) => r.end >= lost.back);
      lost.ticked = Math.min(...after.map((r) => r.end));
      lost.raised = firedBetween(mon.seen, lost.at, lost.quiet);
    } catch (err) {
      failures.push(`telemetry lost: ${(err as Error).message}`);
    }
    report();
  }, 480_000);

  afterAll(async () => {
    dash?.stop();
    await sched?.stop();
    await mon?.stop();
    await Promise.all([...inst.values()].map((i) => i.world.stop()));
    await p?.stop();
  });

  test("every story ran to its end", () => {
    expect(failures).toEqual([]);
  });

  const each = STORIES.flatMap((s) => s.expect);
  test.each(each.map((e) => [`${e.alert} on ${e.installation}`, e] as const))(
    "%s fires within its promise, not before, and resolves once the cause is gone",
    (_, e) => {
      const i = inst.get(e.installation) as Installation;
      const from = i.marks[e.from] as number;
      const at = fired.get(e) as number;
      expect({ firedAfterPromise: at - from >= e.promise - SLACK }).toEqual({ firedAfterPromise: true });
      expect({
        within: at - from <= e.promise + SLACK,
        late: Math.round((at - from - e.promise) / minutes(1)),
      }).toMatchObject({ within: true });
      const gone = resolved.get(e) as number;
      expect({ resolvedInTime: gone - (i.marks[e.gone] as number) <= SLACK }).toEqual({
        resolvedInTime: true,
      });
    },
  );

  test.each(each.map((e) => [`${e.alert} on ${e.installation}`, e] as const))(
    "%s names the installation and the image",
    (_, e) => {
      const seen = mon.seen.flatMap((s) => s.firing).find(predicate(e));
      expect(seen?.labels).toMatchObject(labelsOf(e));
      expect(seen?.annotations.summary).toContain(installationText(e.installation));
      if (e.image) expect(seen?.annotations.summary).toContain(e.image);
    },
  );

  test("nothing fires on the healthy installations, and nothing but the stories' alerts anywhere", () => {
    const expected = new Set(
      each.map(
        (e) =>
          firedBetween(
            [
              {
                t: 0,
                firing: [
                  { labels: { alertname: e.alert, ...labelsOf(e) }, annotations: {}, state: "firing" },
                ],
              },
            ],
            0,
            1,
          )[0],
      ),
    );
    const all = firedBetween(mon.seen, phaseA.from, phaseA.to);
    expect(all.filter((a) => !expected.has(a))).toEqual([]);
    for (const h of HEALTHY) {
      const own = all.filter((a) => a.includes(`image_refresh_installation=${installationText(h)}`));
      expect({ h, own }).toEqual({ h, own: [] });
    }
  });

  test("telemetry lost: NoTelemetry fires 30 minutes after the Collector went away and resolves when it is back", () => {
    expect(lost.fired - lost.at).toBeGreaterThanOrEqual(minutes(30) - SLACK);
    expect(lost.fired - lost.at).toBeLessThanOrEqual(minutes(30) + SLACK);
    expect(Number.isFinite(lost.ticked)).toBe(true);
    expect(lost.resolved - lost.ticked).toBeLessThanOrEqual(SLACK);
    // NoTicks says "or its telemetry stopped arriving": it joins for every installation, and only it.
    const names = new Set(lost.raised.map((a) => a.replace(/\{.*/, "")));
    expect([...names].sort()).toEqual(["ImageRefreshNoTelemetry", "ImageRefreshNoTicks"]);
    expect(lost.quiet - lost.back).toBeLessThanOrEqual(minutes(5) + SLACK);
  });

  test("the traces panel is the one panel not evaluated on Prometheus: a Jaeger search, run by jaeger.test.ts", () => {
    expect(notEvaluated()).toEqual([
      "Ticks (traces) of one image by outcome: attempts, lockouts and resets are linked across ticks (jaeger, search)",
    ]);
  });

  test("every other dashboard panel's query returns data from this Prometheus", () => {
    expect(dash.errors()).toEqual([]);
    expect(dash.unknownSeries()).toEqual([]);
    expect(dash.empty()).toEqual([]);
  });
});
