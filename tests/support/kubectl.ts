// The real kubectl against a simulated API server: a kubeconfig for it, and a runner that gives
// every run a fresh discovery cache, so that every run really asks the simulator.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SimApiServer } from "../../sim/apiserver/index.ts";

export const KUBECTL = Bun.which("kubectl") ?? "/usr/bin/kubectl";

export interface KubectlResult {
  code: number;
  out: string;
  err: string;
}

export function kubectlFor(sim: SimApiServer, prefix: string): (...args: string[]) => Promise<KubectlResult> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, sim.kubeconfig({ namespace: "apps" }));
  return async (...args) => {
    const cache = mkdtempSync(join(dir, "cache-"));
    const p = Bun.spawn([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", cache, ...args], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, KUBECONFIG: kubeconfig, HOME: dir },
    });
    const [out, err, code] = await Promise.all([
      new Response(p.stdout).text(),
      new Response(p.stderr).text(),
      p.exited,
    ]);
    return { code, out, err };
  };
}
