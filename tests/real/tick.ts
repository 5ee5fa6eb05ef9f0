// The compiled binary run against the real cluster as a given user (a kubeconfig holding a
// ServiceAccount token), with the CronJob's environment and the run's CA, and what it said.
import { type RunResult, runBinary } from "../support/binary.ts";

export interface Ran extends RunResult {
  outcome?: string;
  reason?: string;
  /** Parsed JSON log lines. */
  lines: Array<Record<string, unknown>>;
  ms: number;
}

export interface TickEnv {
  kubeconfig: string;
  config: string;
  caPath: string;
  env: Record<string, string>;
}

export function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function run(t: TickEnv, args: string[] = ["tick"]): Promise<Ran> {
  const started = Date.now();
  const r = await runBinary([...args, "--config", t.config, "--kubeconfig", t.kubeconfig], {
    env: { NODE_EXTRA_CA_CERTS: t.caPath, ...t.env },
    timeoutMs: 300_000,
  });
  const lines = logLines(r.stderr);
  const last = lines.findLast((o) => o.outcome !== undefined);
  return {
    ...r,
    lines,
    ms: Date.now() - started,
    ...(last
      ? { outcome: String(last.outcome), reason: last.reason === undefined ? undefined : String(last.reason) }
      : {}),
  };
}

/** The messages of log lines at `level` (error, warn, ...). */
export function messages(r: Ran, level: string): string[] {
  return r.lines.filter((l) => l.level === level).map((l) => String(l.msg));
}
