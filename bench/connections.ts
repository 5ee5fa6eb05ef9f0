// One extra no-op tick of a bench world through TCP relays in front of the API server and the
// registry (sim/tcp-relay.ts): the connections it opened to each, and its peak RSS (GNU time).
// A run of its own, apart from the timed ones, so the relays' hop is in no timing.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRelay } from "../sim/tcp-relay.ts";
import { BINARY, outcomeOf } from "./clients.ts";
import { hasGnuTime, peakRssMb, type Spawned } from "./measure.ts";
import type { BenchWorld } from "./world.ts";

const isNoop = (r: Spawned) => r.code === 0 && outcomeOf(r) === "noop";

export interface Counted {
  api: number;
  registry: number;
  /** Peak RSS in MB; NaN without GNU time. */
  rssMb: number;
}

export async function countedTick(w: BenchWorld): Promise<Counted> {
  const api = startRelay({ hostname: "127.0.0.1", port: Number(new URL(w.api.url).port) });
  const [hostname, port] = w.registry.host.split(":") as [string, string];
  const registry = startRelay({ hostname, port: Number(port) });
  try {
    const kubeconfig = join(w.dir, "kubeconfig-counted");
    writeFileSync(kubeconfig, readFileSync(w.kubeconfigPath, "utf8").replace(w.apiUrl, api.url));
    const config = JSON.parse(readFileSync(w.configPath, "utf8"));
    config.registry.endpoint = registry.url;
    const configPath = join(w.dir, "config-counted.json");
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const cmd = [BINARY, "tick", "--config", configPath, "--kubeconfig", kubeconfig];
    let rssMb = Number.NaN;
    if (hasGnuTime()) rssMb = await peakRssMb(cmd, w.env(), isNoop);
    else {
      const p = Bun.spawn(cmd, { env: w.env(), stdout: "ignore", stderr: "ignore" });
      await p.exited;
    }
    return { api: api.connections.length, registry: registry.connections.length, rssMb };
  } finally {
    api.stop();
    registry.stop();
  }
}
