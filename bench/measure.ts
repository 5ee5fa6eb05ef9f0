// Timing and statistics for the bench: spawn-to-exit wall time of a process, peak RSS through
// GNU time, and median/min/max summaries. Every figure is a wall-clock time on a noisy machine,
// so the table quotes ratios measured in the same run rather than absolute promises.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Spawned {
  code: number;
  ms: number;
  /** Epoch ms just before the spawn, to compare with the sims' request logs. */
  startedAt: number;
  /**
   * User + system CPU of the process and the children it waited for (wait4's rusage). Far less
   * sensitive than wall time to other work on the machine, so it backs the wall-time ratios.
   */
  cpuMs: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; `ms` runs from just before the spawn to the exit. */
export async function timed(cmd: string[], env: Record<string, string>): Promise<Spawned> {
  const t0 = performance.now();
  const startedAt = performance.timeOrigin + t0;
  const p = Bun.spawn(cmd, { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  const ms = performance.now() - t0;
  const cpuMs = Number(p.resourceUsage()?.cpuTime.total ?? 0) / 1000;
  return { code, ms, startedAt, cpuMs, stdout, stderr };
}

/** Fails loudly: a benchmark of a run that did not do its job would measure the wrong thing. */
export function check(r: Spawned, what: string, expect: (r: Spawned) => boolean): Spawned {
  if (!expect(r))
    throw new Error(`Cannot benchmark ${what}: exit ${r.code}\n${r.stdout}\n${r.stderr}`.trimEnd());
  return r;
}

export const TIME = "/usr/bin/time";
export const hasGnuTime = (): boolean => existsSync(TIME);

/**
 * Peak resident set size (ru_maxrss of the child, as GNU time reports it: the high-water mark of
 * the process's resident memory, shared library pages included) in MB.
 */
export async function peakRssMb(
  cmd: string[],
  env: Record<string, string>,
  expect: (r: Spawned) => boolean,
): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "bench-rss-"));
  const out = join(dir, "rss");
  try {
    check(await timed([TIME, "-f", "%M", "-o", out, ...cmd], env), cmd.join(" "), expect);
    return Number(readFileSync(out, "utf8").trim().split("\n").at(-1)) / 1024;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Stats {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function stats(values: readonly number[]): Stats {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median, min: s[0] ?? Number.NaN, max: s.at(-1) ?? Number.NaN, n: s.length };
}

/** Repeats `fn` `n` times, one at a time (parallel runs would measure each other). */
export async function repeat(n: number, fn: (i: number) => Promise<number>): Promise<Stats> {
  const values: number[] = [];
  for (let i = 0; i < n; i++) values.push(await fn(i));
  return stats(values);
}

export const fmtMs = (s: Stats): string =>
  `${s.median.toFixed(1)} ms (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
export const fmtMb = (s: Stats): string =>
  `${s.median.toFixed(1)} MB (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
export const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;

/** A markdown table. */
export function table(headers: string[], rows: string[][]): string[] {
  return [
    `| ${headers.join(" | ")} |`,
    `| ${headers.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
}

/** "5" when every run made the same number of requests, "5–6" when they differed. */
export function span(values: readonly number[]): string {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}

/** met / MISSED, for a target line. */
export const verdict = (ok: boolean): string => (ok ? "met" : "**MISSED**");
