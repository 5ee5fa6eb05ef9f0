// 8. Refresh at scale: N independent images, one Deployment each, every rollout taking the same
// simulated time (the controller's "slow" mode), refreshed one workload after another
// (parallelism 1) and four groups at once (parallelism 4). What a user feels is the tick's wall
// time: about N rollout times serially, about ceil(N / 4) side by side. The simulated cluster
// records every rollout, so the table also says how many were in flight at once.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RolloutRecord } from "../sim/apiserver/index.ts";
import { outcomeOf, runProduct } from "./clients.ts";
import { fmtMs, ratio, type Stats, stats, table } from "./measure.ts";
import type { BenchContext } from "./noop.ts";
import { type BenchWorld, startBenchWorld } from "./world.ts";

/** The simulated time every rollout takes, from its patch to its last pod Ready. */
const ROLLOUT_MS = 300;
const SIZES = [1, 4, 16, 50];
const WIDTHS = [1, 4] as const;

export async function parallelSection(ctx: BenchContext): Promise<string[]> {
  ctx.log("8. refresh of independent images, serial against parallel");
  const reps = ctx.quick ? 1 : 3;
  const rows: string[][] = [];
  for (const n of SIZES) {
    const w = await startBenchWorld({ scale: { targets: n, maxRepos: n }, stepMs: 2 });
    try {
      const got = await measureSize(w, n, reps);
      const [serial, parallel] = [got[1].ms, got[4].ms];
      rows.push([
        String(n),
        fmtMs(serial),
        fmtMs(parallel),
        ratio(serial.median, parallel.median),
        `${Math.ceil(n / 4) * ROLLOUT_MS} ms`,
        `${got[1].most} / ${got[4].most}`,
      ]);
    } finally {
      await w.stop();
    }
  }
  return [
    `### 8. Refresh of N independent images (one workload each, every rollout ${ROLLOUT_MS} ms): serial against parallel`,
    "",
    ...table(
      [
        "images",
        "parallelism 1",
        "parallelism 4",
        "speed-up",
        `ceil(N / 4) × ${ROLLOUT_MS} ms`,
        "most rollouts at once (1 / 4)",
      ],
      rows,
    ),
    "",
    `- Whole tick, spawn to exit, median (min–max) of ${reps} run${reps === 1 ? "" : "s"}; verifyFor 0s, so a rollout's time is the simulated one.`,
    "",
  ];
}

async function measureSize(
  w: BenchWorld,
  n: number,
  reps: number,
): Promise<Record<(typeof WIDTHS)[number], { ms: Stats; most: number }>> {
  const first = await runProduct(w);
  if (first.code !== 0)
    throw new Error(`Cannot record the first observation: exit ${first.code}\n${first.stderr}`);
  for (let i = 0; i < n; i++) w.api.setMode("Deployment", "apps", `w-${i}`, "slow", { slowMs: ROLLOUT_MS });
  const configs = Object.fromEntries(WIDTHS.map((p) => [p, withParallelism(w, p)]));
  const ms: Record<number, number[]> = { 1: [], 4: [] };
  const most: Record<number, number> = { 1: 0, 4: 0 };
  for (let r = 0; r < reps; r++)
    for (const p of WIDTHS) {
      w.pushAll();
      const before = w.api.rollouts.length;
      const run = await runProduct(w, ["tick"], {}, [], configs[p]);
      if (run.code !== 0 || outcomeOf(run) !== "refreshed")
        throw new Error(
          `Cannot benchmark a refresh of ${n} images at parallelism ${p}: exit ${run.code}\n${run.stderr}`,
        );
      ms[p]?.push(run.ms);
      most[p] = Math.max(most[p] ?? 0, mostAtOnce(w.api.rollouts.slice(before)));
    }
  return {
    1: { ms: stats(ms[1] ?? []), most: most[1] ?? 0 },
    4: { ms: stats(ms[4] ?? []), most: most[4] ?? 0 },
  };
}

/** The world's config with `parallelism` set; returns its path. */
function withParallelism(w: BenchWorld, p: number): string {
  const config = JSON.parse(readFileSync(w.configPath, "utf8"));
  const path = join(w.dir, `config-parallelism-${p}.json`);
  writeFileSync(path, JSON.stringify({ ...config, parallelism: p }, null, 2));
  return path;
}

/** The most rollouts in flight at once (starts and ends in the simulator's sequence). */
function mostAtOnce(records: readonly RolloutRecord[]): number {
  const marks = records.flatMap(
    (r): Array<[number, number]> => [
      [r.start, 1],
      [r.end ?? Number.POSITIVE_INFINITY, -1],
    ],
  );
  marks.sort((a, b) => a[0] - b[0]);
  let now = 0;
  let most = 0;
  for (const [, d] of marks) {
    now += d;
    most = Math.max(most, now);
  }
  return most;
}
