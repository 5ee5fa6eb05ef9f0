// SIGTERM is what activeDeadlineSeconds and a node drain send. A tick must then end promptly on the
// failure path: exit 1, the attempt counter left in place, nothing written after the signal, and
// its telemetry flushed so the failed tick is still visible.
import { afterEach, describe, expect, test } from "bun:test";
import { rootSpans, startCollector } from "../../sim/collector.ts";
import type { World } from "../support/world.ts";
import { AGENT_PATH, k, makeScene, outcomeOf, STORE_PATH } from "./scene.ts";
import { start, until } from "./spawn.ts";

let world: World | undefined;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await world?.stop();
  world = undefined;
  for (const stop of stops.splice(0)) await stop();
});

/** node-agent has a new digest and never settles; the wait would last a minute without a signal. */
async function flapping(): Promise<World> {
  const s = await makeScene("unchanged", (c) => (c.rolloutTimeout = "60s"));
  world = s.w;
  s.w.registry.push("myorg/node-agent", "stable", { multiArch: true });
  s.w.api.setMode("DaemonSet", "agents", "node-agent", "flap");
  return s.w;
}

/** Sends SIGTERM once `ready` holds; returns the result, the signal's time and the time to exit. */
async function terminate(w: World, ready: () => boolean, env: Record<string, string> = {}) {
  const { proc, done } = start(w, ["tick"], env);
  await until("the tick reach the point under test", ready);
  await Bun.sleep(100); // well inside the wait, not at its first request
  const signalled = Date.now();
  proc.kill("SIGTERM");
  const r = await done;
  return { r, signalled, exitMs: Date.now() - signalled };
}

const watching = (w: World) => () =>
  w.api.log.some(
    (e) => e.path.startsWith("/apis/apps/v1/namespaces/agents/daemonsets") && e.query.watch === "1",
  );

describe("SIGTERM", () => {
  test("during a rollout wait: exit 1 within 2 s, counter kept, nothing written after", async () => {
    const w = await flapping();
    const { r, signalled, exitMs } = await terminate(w, watching(w));
    expect(exitMs).toBeLessThan(2000);
    expect(r.code).toBe(1);
    expect(outcomeOf(r)).toBe("failed");
    expect(r.stderr).toContain("the tick was stopped: received SIGTERM");
    // The patch went out before the signal; the failure path leaves the count for the next tick.
    expect(w.api.log.some((e) => e.method === "PATCH" && e.path === AGENT_PATH && e.start < signalled)).toBe(
      true,
    );
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("1");
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.api.log.filter((e) => e.start >= signalled && e.method !== "GET")).toEqual([]);
  }, 20_000);

  test("while the store GET hangs: exit 1 within 2 s, nothing written", async () => {
    const s = await makeScene("changed", (c) => (c.requestTimeout = "30s"));
    world = s.w;
    s.w.api.faults.add({ method: "GET", path: STORE_PATH, fault: { type: "hang" } });
    const { r, exitMs } = await terminate(s.w, () => s.w.api.log.length > 0);
    expect(exitMs).toBeLessThan(2000);
    expect(r.code).toBe(1);
    expect(outcomeOf(r)).toBe("error");
    expect(s.w.api.log.filter((e) => e.method !== "GET")).toEqual([]);
    expect(s.w.registry.log).toEqual([]);
  }, 20_000);

  test("telemetry is flushed: the root span with outcome failed reaches the collector", async () => {
    const collector = startCollector();
    stops.push(() => collector.stop());
    const w = await flapping();
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_METRICS_EXPORTER: "none",
    };
    const { r, exitMs } = await terminate(w, watching(w), env);
    expect(r.code).toBe(1);
    // The flush is bounded at 5 s; a local collector answers at once.
    expect(exitMs).toBeLessThan(2000);
    const roots = rootSpans(collector);
    expect(roots).toHaveLength(1);
    expect(roots[0]?.attributes["image_refresh.outcome"]).toBe("failed");
    expect(roots[0]?.status.code).toBe("error");
    expect(collector.spans.some((sp) => sp.name === "rollout.wait")).toBe(true);
  }, 20_000);
});

describe("signals: a stopped tick never claims success", () => {
  test("SIGTERM while the registry HEAD is in flight: not noop, not exit 0", async () => {
    const s = await makeScene("changed", (c) => (c.requestTimeout = "30s"));
    world = s.w;
    s.w.registry.faults.add({ method: "HEAD", path: /\/manifests\//, fault: { type: "hang" } });
    const { proc, done } = start(s.w, ["tick"]);
    await until("a manifest HEAD", () => s.w.registry.log.some((e) => e.method === "HEAD"));
    await Bun.sleep(100);
    proc.kill("SIGTERM");
    const r = await done;
    // The HEADs were aborted, not answered: nothing may be decided from them, and the tick did
    // not do its job (exit 0 only for a tick that did its job or deliberately held).
    expect(outcomeOf(r)).toBe("error");
    expect(r.stderr).toContain("reason=stopped");
    expect(r.stderr).toContain("the tick was stopped before it could decide: received SIGTERM");
    expect(r.code).toBe(1);
    expect(s.w.api.log.filter((e) => e.method !== "GET")).toEqual([]);
  }, 30_000);
});
