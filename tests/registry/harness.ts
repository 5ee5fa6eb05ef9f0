// Shared set-up of the registry client suites: simulated registries over HTTPS with one CA per
// file, stopped after each test, and resolve options that record spans and log lines.
import { afterEach } from "bun:test";
import { memoryLogger } from "../../lib/log.ts";
import type { ResolveOptions } from "../../lib/registry/client.ts";
import { type SimRegistry, type StartRegistryOptions, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { recordingTelemetry } from "../support/recording-telemetry.ts";

export function registryHarness(requestTimeoutMs: number) {
  const tls = generateTls();
  const started: SimRegistry[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((r) => r.stop()));
  });
  async function sim(opts: StartRegistryOptions = {}, plain = false): Promise<SimRegistry> {
    const r = await startRegistry({ ...opts, tls: plain ? undefined : tls });
    started.push(r);
    return r;
  }
  function options(r: SimRegistry, extra: Partial<ResolveOptions> = {}) {
    const telemetry = recordingTelemetry();
    const log = memoryLogger();
    const opts: ResolveOptions = {
      host: r.host,
      requestTimeoutMs,
      signal: new AbortController().signal,
      telemetry,
      log,
      ca: tls.caPem,
      ...extra,
    };
    return { opts, telemetry, log };
  }
  return { tls, sim, options };
}
