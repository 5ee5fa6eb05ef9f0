// Section 7: the no-op tick with the registry 20 and 50 ms away (round trip), as it is from an edge cluster,
// where a connection's set-up is a round trip and the bench's 127.0.0.1 hides it. A relay in front
// of the simulated registry holds every byte back DELAY_MS each way (sim/tcp-relay.ts); the tick
// and the limit script reach the registry's API and its token endpoint through it, the API
// server directly. The tick has the token endpoint configured (registry.token), as the limit
// script is given it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRelay } from "../sim/tcp-relay.ts";
import { BINARY, limitPlan } from "./clients.ts";
import { type Client, compare } from "./compare.ts";
import { fmtMs, ratio, table, timed, verdict } from "./measure.ts";
import { type BenchContext, isNoop, limitOk, recordedWorld } from "./noop.ts";
import { SERVICE } from "./world.ts";

/** Each way: the registry 20 and 50 ms away, round trip. */
const DELAYS_MS = [10, 25];

export async function distanceSection(ctx: BenchContext): Promise<string[]> {
  const out: string[] = [];
  for (const d of DELAYS_MS) out.push(...(await atDistance(ctx, d)));
  return out;
}

async function atDistance(ctx: BenchContext, delayMs: number): Promise<string[]> {
  ctx.log(`7. the registry ${2 * delayMs} ms away`);
  const w = await recordedWorld();
  const [hostname, port] = w.registry.host.split(":") as [string, string];
  const relay = startRelay({ hostname, port: Number(port) }, delayMs);
  try {
    const config = JSON.parse(readFileSync(w.tokenConfigPath, "utf8"));
    config.registry = {
      host: w.registry.host,
      endpoint: relay.url,
      token: { realm: `${relay.url}/token`, service: SERVICE },
    };
    const configPath = join(w.dir, "config-far.json");
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const plan = JSON.parse(readFileSync(limitPlan(w), "utf8"));
    plan.registryUrl = relay.url;
    plan.tokenUrl = String(plan.tokenUrl).replace(w.registry.url, relay.url);
    const planPath = join(w.dir, "limit-plan-far.json");
    writeFileSync(planPath, JSON.stringify(plan));
    const files = ["--config", configPath, "--kubeconfig", w.kubeconfigPath];
    const clients: Client[] = [
      { name: "limit (compiled)", run: () => timed([...ctx.limit, planPath], w.env()), ok: limitOk },
      {
        name: "limit (compiled), the registry once the store answered (the tick's order)",
        run: () => timed([...ctx.limit, planPath], w.env({ LIMIT_ORDER: "store-first" })),
        ok: limitOk,
      },
      { name: "image-refresh tick", run: () => timed([BINARY, "tick", ...files], w.env()), ok: isNoop },
      ...(ctx.baseline
        ? [
            {
              name: `image-refresh tick at ${ctx.baseline.ref} (baseline)`,
              run: () => timed([...(ctx.baseline?.command ?? []), "tick", ...files], w.env()),
              ok: isNoop,
            },
          ]
        : []),
    ];
    const ms = await compare(w, clients, ctx.reps);
    const [l] = ms as [(typeof ms)[0]];
    const tick = ms.find((m) => m.name === "image-refresh tick") ?? l;
    const wall = tick.ms.median / l.ms.median;
    const cpuAbove = tick.cpu.median - l.cpu.median;
    return [
      `### 7. No-op tick, the registry ${2 * delayMs} ms away (round trip; the API server local)`,
      "",
      ...table(
        ["client", "wall: median (min–max)", "wall × limit", "CPU user+sys: median"],
        ms.map((m) => [
          m.name,
          fmtMs(m.ms),
          ratio(m.ms.median, l.ms.median),
          `${m.cpu.median.toFixed(0)} ms`,
        ]),
      ),
      "",
      "- Every byte to and from the registry (its API and its token endpoint) is held back " +
        `${delayMs} ms each way by a relay; TLS 1.3's handshake is one of those round trips, the TCP ` +
        "handshake stays local. The tick opens its registry connection while the store is read.",
      `- Wall time within 1.1× the limit: ${verdict(wall <= 1.1)} (${wall.toFixed(2)}×); CPU at most 10 ms above it: ${verdict(cpuAbove <= 10)} (${cpuAbove >= 0 ? "+" : ""}${cpuAbove.toFixed(1)} ms).`,
      "",
    ];
  } finally {
    relay.stop();
    await w.stop();
  }
}
