// Runs the compiled binary the way CI and users do; tests never import the product in-process
// when they mean to test the product's behaviour end to end.
import { existsSync } from "node:fs";
import { join } from "node:path";

export const BINARY = join(import.meta.dir, "..", "..", "dist", "image-refresh");

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runBinary(
  args: string[],
  opts: { env?: Record<string, string | undefined>; timeoutMs?: number; stdin?: string; cwd?: string } = {},
): Promise<RunResult> {
  if (!existsSync(BINARY)) throw new Error(`Cannot run ${BINARY}: build it first with npm run build`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
  };
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  const proc = Bun.spawn([BINARY, ...args], {
    env,
    cwd: opts.cwd,
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}
