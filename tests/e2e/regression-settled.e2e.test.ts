// A build that goes bad long after its verification, on a workload that looks settled: its pods
// restart once and run Ready again, the Deployment fully available. Inside regressionWindow every
// target still running the recorded build has its pods listed once per tick, settled or not, so
// the next tick sees the restart (finished after verified-<key>-at), counts it as a regression of
// that build and reverts it; the tick after does not count that restart again. Outside the window
// a tick lists no pods.
import { describe, expect, test } from "bun:test";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const image = (name: string, container: string) => w.image("Deployment", "apps", name, container);
const regressedEvents = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300)
    .map((e) => JSON.parse(e.body ?? "{}"))
    .filter((e) => e.reason === "BuildRegressed");
/** The pod LISTs (not watches) a tick made, as "namespace selector". */
const podLists = (log = w.api.log) =>
  log
    .filter((e) => e.method === "GET" && e.path.endsWith("/pods") && e.query.watch !== "1")
    .map((e) => `${e.path.split("/")[4]} ${e.query.labelSelector}`)
    .sort();
/** Requests made before the tick touched anything (its observation). */
const beforeFirstWrite = () => {
  const i = w.api.log.findIndex((e) => e.method !== "GET");
  return i < 0 ? w.api.log : w.api.log.slice(0, i);
};
/** api-proxy's pods that run `ref`. */
const proxyPods = (ref: string) =>
  w.api
    .pods("apps")
    .filter((p) => p.metadata.name.startsWith("api-proxy-") && p.spec.containers[0].image === ref);

async function until(what: string, pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`Cannot see ${what} within ${ms} ms`);
    await Bun.sleep(25);
  }
}

/**
 * A build of myorg/api rolled out and verified; only then (long after its verification, as far as
 * the tick is concerned) do api-proxy's pods restart once, and they run Ready again.
 */
async function verifiedThenRestartedOnce(): Promise<{ old: string; bad: string }> {
  w.writeConfig((c) => (c.verifyFor = "300ms"));
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const bad = w.registry.push("myorg/api", "stable");
  const r = await w.run();
  expect(r.stderr).toContain("refreshed: api: refreshed");
  expect(w.ours()[k("last-refreshed-api-digest")]).toBe(bad);
  expect(w.ours()[k("previous-api-digest")]).toBe(old);
  // Declared after the tick: the restart cannot fall inside its verification.
  w.api.failImages("Deployment", "apps", "api-proxy", [pin(bad)], { restartOnceAfterMs: 50 });
  const restarted = (p: any) => p.status.containerStatuses[0].restartCount === 1;
  const ready = (p: any) => p.status.containerStatuses[0].ready === true;
  await until("api-proxy's pods restarted once", () => proxyPods(pin(bad)).some(restarted));
  await until("api-proxy's pods Ready again", () => {
    const pods = proxyPods(pin(bad));
    return pods.length > 0 && pods.every((p) => restarted(p) && ready(p));
  });
  await waitFor(w.api, "Deployment", "apps", "api-proxy", settled, 5000);
  w.api.clearLog();
  return { old, bad };
}

describe("a regression on a workload that looks settled", () => {
  test("the next tick counts the restart and reverts; the fix rolls out after it, the restart not counted again", async () => {
    const { old, bad } = await verifiedThenRestartedOnce();
    const fix = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("failed: api: failed attempt 1/3 (reverted)");
    expect(r.stderr).toContain(`build ${bad} regressed within regressionWindow of its verification`);
    expect(r.stderr).toMatch(
      /Deployment apps\/api-proxy is available, but pod apps\/api-proxy-\w+-\w+: container proxy restarted \(restart count 0 -> 1\)/,
    );
    // One pod list per target that runs the recorded build, before anything is touched.
    expect(podLists(beforeFirstWrite())).toEqual(["apps app=api", "apps app=api-proxy"]);
    expect(image("api", "api")).toBe(pin(old));
    expect(image("api-proxy", "proxy")).toBe(pin(old));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("failed-api-digest")]).toBe(bad);
    expect(w.ours()[k("last-attempt-api")]).toMatch(new RegExp(`^${bad} regressed `));
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(old);
    expect(regressedEvents().map((e) => e.regarding?.name)).toEqual(["api-proxy"]);
    // The tick after: the fix rolls out, the old restart counts for nothing.
    w.api.clearLog();
    const next = await w.run();
    expect(next.code).toBe(0);
    expect(next.stderr).toContain("refreshed: api: refreshed");
    expect(image("api-proxy", "proxy")).toBe(pin(fix));
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(regressedEvents()).toEqual([]);
  }, 60_000);

  test("onFailure: keep: counted once; the tick after lists the pods again and does not count the same restart", async () => {
    const { bad } = await verifiedThenRestartedOnce();
    w.writeConfig((c) => {
      c.verifyFor = "300ms";
      c.onFailure = "keep";
    });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("regressed within regressionWindow");
    expect(image("api-proxy", "proxy")).toBe(pin(bad));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    w.api.clearLog();
    const next = await w.run();
    expect(next.stderr).not.toContain("regressed within regressionWindow");
    expect(podLists()).toEqual(["apps app=api", "apps app=api-proxy"]);
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(regressedEvents()).toEqual([]);
  }, 60_000);

  test("a no-op tick inside the window lists each target's pods once; outside it, none", async () => {
    w.writeConfig((c) => (c.verifyFor = "300ms"));
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    expect((await w.run()).stderr).toContain("refreshed: api: refreshed");
    w.api.clearLog();
    const inside = await w.run();
    expect(inside.code).toBe(0);
    expect(inside.stderr).toContain("noop: api");
    expect(podLists()).toEqual(["apps app=api", "apps app=api-proxy"]);
    w.writeConfig((c) => {
      c.verifyFor = "300ms";
      c.regressionWindow = "1s";
    });
    await Bun.sleep(2100);
    w.api.clearLog();
    const outside = await w.run();
    expect(outside.code).toBe(0);
    expect(w.api.log.filter((e) => e.path.endsWith("/pods"))).toEqual([]);
  }, 60_000);
});
