// Captures what the real kube-state-metrics gives the rules: the shipped CronJob on the real
// control plane (cronjob.ts) schedules a Job that runs, then fails, and one that runs, then
// succeeds; the pipeline's Prometheus scrapes kube-state-metrics as job="kube-state-metrics";
// at each stable moment every series of every kube_* metric rules.yaml reads is taken, as a
// shape (k8s/monitoring/ksm-shapes.ts), and written to k8s/monitoring/captured-ksm.json.
// tests/telemetry/monitoring-ksm.test.ts holds the hand-kept promtool series to it;
// cronjob.test.ts holds the committed file to what kube-state-metrics gives during its story.
// Run: npx bun tests/real/pipeline/capture-ksm.ts   (needs the peers of this tier; about 30 s)
import { readFileSync, writeFileSync } from "node:fs";
import {
  KSM_CAPTURED_PATH,
  type KsmCapture,
  type KsmShape,
  ksmMetricsRead,
  normalize,
  shapeKey,
  valueShape,
} from "../../../k8s/monitoring/ksm-shapes.ts";
import type { Api } from "../api.ts";
import { startControlPlane } from "../control-plane.ts";
import { needPeers as needRealPeers, peer } from "../peers.ts";
import { SHIPPED_RULES } from "./configs.ts";
import { applyBase, jobKubelet, jobs, NS, scheduleOnce, setSuspend } from "./cronjob.ts";
import { startKsm } from "./ksm.ts";
import { needPeers } from "./peers.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

/** Three compressed scrapes: long enough for a change to be scraped and evaluated. */
const SETTLE_MS = 1500;

type State = KsmShape["state"];

/** Every series of the metrics the rules read, now, as shapes; a Job's with `states[job_name]`. */
export async function shapesNow(p: Pipeline, states: Record<string, State> = {}): Promise<KsmShape[]> {
  const names = ksmMetricsRead(readFileSync(SHIPPED_RULES, "utf8"));
  const result = await p.query(`{job="kube-state-metrics", __name__=~"${names.join("|")}"}`);
  return result.map((r) => {
    const metric = r.metric.__name__ as string;
    const state = r.metric.job_name ? states[r.metric.job_name] : undefined;
    const v = (r.value as [number, string])[1];
    return {
      metric,
      labels: normalize(r.metric),
      ...(state ? { state } : {}),
      values: [valueShape(metric, v)],
    };
  });
}

/** Shapes merged: one per metric, labels and state, with every value seen. */
export function merge(all: KsmShape[]): KsmShape[] {
  const out = new Map<string, KsmShape>();
  for (const s of all) {
    const k = `${shapeKey(s.metric, s.labels)} ${s.state ?? ""}`;
    const had = out.get(k);
    out.set(k, { ...s, values: [...new Set([...(had?.values ?? []), ...s.values])].sort() });
  }
  return [...out.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, s]) => s);
}

async function finished(api: Api, name: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const j = (await jobs(api)).find((x) => x.metadata.name === name);
    const c = (j?.status?.conditions ?? []) as Array<{ type: string; status: string }>;
    if (c.some((x) => (x.type === "Failed" || x.type === "Complete") && x.status === "True")) return;
    await Bun.sleep(50);
  }
  throw new Error(`Job ${name} did not finish`);
}

async function main() {
  const peers = needPeers("tests/real/pipeline/capture-ksm.ts", { binary: false });
  if (!peers || needRealPeers(["kube", "ksm"], "tests/real/pipeline/capture-ksm.ts")) process.exit(1);
  const cp = await startControlPlane({ hardLimitS: 300 });
  try {
    await applyBase(cp.admin);
    const ksm = await startKsm(cp.adminKubeconfig, cp.dir, NS);
    const p = await startPipeline(peers, [{ job: "kube-state-metrics", target: ksm.target }]);
    const kubelet = jobKubelet(cp.admin);
    const seen: KsmShape[] = [];
    const take = async (states: Record<string, State> = {}) => {
      await Bun.sleep(SETTLE_MS);
      seen.push(...(await shapesNow(p, states)));
    };
    await take();
    const states: Record<string, State> = {};
    for (const [n, code] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const name = (await scheduleOnce(cp.admin, n)) as string;
      await take({ ...states, [name]: "running" });
      kubelet.exitCode.set(name, code);
      await finished(cp.admin, name);
      states[name] = code === 0 ? "succeeded" : "failed";
      await take(states);
    }
    await setSuspend(cp.admin, true);
    await take(states);
    const out: KsmCapture = { kubeStateMetrics: version(), shapes: merge(seen) };
    writeFileSync(KSM_CAPTURED_PATH, `${JSON.stringify(out, null, 2)}\n`);
    Bun.spawnSync(["npx", "biome", "format", "--write", KSM_CAPTURED_PATH], {
      stdout: "ignore",
      stderr: "ignore",
    });
    console.log(`wrote ${KSM_CAPTURED_PATH}: ${out.shapes.length} shapes`);
    await kubelet.stop();
    await p.stop();
    await ksm.peer.stop();
  } finally {
    await cp.stop();
  }
}

/** The version kube-state-metrics reports of itself (its build stamps it, peers/build.sh). */
function version(): string {
  const r = Bun.spawnSync([peer("ksm", "kube-state-metrics"), "version"], { stdout: "pipe" });
  return /version (v[\d.]+)/.exec(r.stdout.toString())?.[1] ?? "unknown";
}

if (import.meta.main) await main();
