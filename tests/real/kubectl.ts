// The real kubectl and helm built from peers/, run against the real control plane with a given
// kubeconfig, a fresh discovery cache per run and stdin when asked.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { peer } from "./peers.ts";

export interface ToolResult {
  code: number;
  out: string;
  err: string;
}

async function run(
  argv: string[],
  opts: { home: string; kubeconfig: string; stdin?: string },
): Promise<ToolResult> {
  const p = Bun.spawn(argv, {
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: opts.home, KUBECONFIG: opts.kubeconfig },
  });
  const timer = setTimeout(() => p.kill("SIGKILL"), 120_000);
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  clearTimeout(timer);
  return { code, out, err };
}

export type Runner = (args: string[], opts?: { stdin?: string }) => Promise<ToolResult>;

/** kubectl with `kubeconfig`; every run gets its own discovery cache, so it really asks the server. */
export function kubectl(kubeconfig: string, dir: string): Runner {
  return (args, opts = {}) => {
    const home = mkdtempSync(join(dir, "kubectl-"));
    const argv = [
      peer("kube", "kubectl"),
      "--kubeconfig",
      kubeconfig,
      "--cache-dir",
      join(home, "cache"),
      ...args,
    ];
    return run(argv, { home, kubeconfig, ...opts });
  };
}

/** helm v3 or v4 with `kubeconfig`, its cache and config under a fresh home. */
export function helm(major: 3 | 4, kubeconfig: string, dir: string): Runner {
  return (args, opts = {}) => {
    const home = mkdtempSync(join(dir, `helm${major}-`));
    return run([peer(major === 3 ? "helm3" : "helm4", "helm"), "--kubeconfig", kubeconfig, ...args], {
      home,
      kubeconfig,
      ...opts,
    });
  };
}

// client-go's reflector logs this (klog, "I1202 21:25:33.123456 77 reflector.go:664] ...") when
// the watch behind helm's --wait is cancelled because the wait is over: the end of a watch it
// stopped itself, not a fault. Seen once from Helm 4 after an install that succeeded.
const WATCH_CANCELLED =
  /^[IW]\d{4} [\d:.]+\s+\d+ reflector\.go:\d+\] "Warning: watch ended with error" .*\bcontext canceled\b/;

/** The lines of a tool's stderr that say something is wrong: all but a wait's own cancelled watch. */
export function stderrProblems(err: string): string[] {
  return err
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !WATCH_CANCELLED.test(l));
}

/** Fails with kubectl's own words unless it exited 0; returns stdout. */
export async function ok(r: Promise<ToolResult>, what: string): Promise<string> {
  const x = await r;
  if (x.code !== 0) throw new Error(`${what} failed (exit ${x.code}): ${x.err}${x.out}`);
  return x.out;
}
