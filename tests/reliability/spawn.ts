// Starts the compiled binary against a world, like World.run, but hands back the live process
// (signals, /proc) and lets IMAGE_REFRESH_BINARY point at another build: that is how these tests
// were run against deliberately broken binaries to see them fail.
import type { Subprocess } from "bun";
import { BINARY, type RunResult } from "../support/binary.ts";
import type { World } from "../support/world.ts";

export const BIN = process.env.IMAGE_REFRESH_BINARY ?? BINARY;

export interface Started {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Resolves when the process has exited and both streams are read. */
  done: Promise<RunResult>;
}

export function start(w: World, args: string[] = ["tick"], env: Record<string, string> = {}): Started {
  const files = [
    ...(args.includes("--config") ? [] : ["--config", w.configPath]),
    ...(args.includes("--kubeconfig") ? [] : ["--kubeconfig", w.kubeconfigPath]),
  ];
  const proc = Bun.spawn([BIN, ...args, ...files], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/tmp", NODE_EXTRA_CA_CERTS: w.caPath, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  // A stuck binary must fail the test, not hang the suite.
  const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const done = Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]).then(([stdout, stderr, code]) => {
    clearTimeout(timer);
    return { code, stdout, stderr };
  });
  return { proc, done };
}

export function run(w: World, args?: string[], env?: Record<string, string>): Promise<RunResult> {
  return start(w, args, env).done;
}

/** Waits for `cond` while a started tick runs; throws naming `what` after `ms`. */
export async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`Cannot see ${what} within ${ms} ms`);
    await Bun.sleep(10);
  }
}
