// Regressions end to end: a build verified and recorded whose pods crash later (after its
// verification window) is, on the next tick within regressionWindow, a failed attempt of that
// build: counted with its digest before anything is touched, its targets reverted to the build
// before it (recorded again), a Warning Event naming the pod; a fix pushed meanwhile rolls out on
// the tick after. Past the window, the unsettled workload is only skipped, as before.
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
const events = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300)
    .map((e) => JSON.parse(e.body ?? "{}"))
    .map((e) => ({ reason: e.reason as string, name: e.regarding?.name as string, note: e.note as string }));

/** A build of myorg/api that passes its verification and crashes on api-proxy shortly after. */
async function verifiedThenCrashing(): Promise<{ old: string; bad: string }> {
  w.writeConfig((c) => (c.verifyFor = "300ms"));
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const bad = w.registry.push("myorg/api", "stable");
  w.api.failImages("Deployment", "apps", "api-proxy", [pin(bad)], { crashAfterMs: 1200 });
  const r = await w.run();
  expect(r.stderr).toContain("refreshed: api: refreshed");
  expect(w.ours()[k("last-refreshed-api-digest")]).toBe(bad);
  expect(w.ours()[k("previous-api-digest")]).toBe(old);
  expect(w.ours()[k("verified-api-at")]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  // The crash comes after the verification: the workload no longer settles.
  await waitFor(w.api, "Deployment", "apps", "api-proxy", (o) => !settled(o), 5000);
  w.api.clearLog();
  return { old, bad };
}

describe("regressionWindow", () => {
  test("a verified build that crashes later: the next tick counts it, reverts to the previous build, the fix rolls out after", async () => {
    const { old, bad } = await verifiedThenCrashing();
    const fix = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("failed: api: failed attempt 1/3 (reverted)");
    expect(r.stderr).toContain(`build ${bad} regressed within regressionWindow of its verification`);
    expect(r.stderr).toMatch(
      /pod apps\/api-proxy-\w+-\w+: container proxy (waits in CrashLoopBackOff|restarted)/,
    );
    expect(image("api", "api")).toBe(pin(old));
    expect(image("api-proxy", "proxy")).toBe(pin(old));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("failed-api-digest")]).toBe(bad);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(old);
    expect(w.ours()[k("verified-api-at")]).toBeUndefined();
    const regressed = events().filter((e) => e.reason === "BuildRegressed");
    expect(regressed.map((e) => e.name)).toEqual(["api-proxy"]);
    expect(regressed[0]?.note).toMatch(/pod apps\/api-proxy-\w+-\w+: container proxy/);
    // Nothing in front of the fix: the tick after rolls it out.
    const next = await w.run();
    expect(next.code).toBe(0);
    expect(next.stderr).toContain("refreshed: api: refreshed");
    expect(image("api-proxy", "proxy")).toBe(pin(fix));
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(fix);
    expect(w.ours()[k("previous-api-digest")]).toBe(old);
    // Another build verified: its count reset, the regressed build's mark gone.
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.ours()[k("regressed-api-digest")]).toBeUndefined();
  }, 30_000);

  test("a build that regresses every time it is retried is locked out, not rolled out for ever", async () => {
    const { old, bad } = await verifiedThenCrashing();
    const crashed = () => waitFor(w.api, "Deployment", "apps", "api-proxy", (o) => !settled(o), 5000);
    const first = await w.run();
    expect(first.stderr).toContain("failed: api: failed attempt 1/3 (reverted)");
    expect(w.ours()[k("regressed-api-digest")]).toBe(bad);
    // The tag still names it: retried, verified again, but its count is kept.
    const retry = await w.run();
    expect(retry.stderr).toContain("refreshed: api: refreshed");
    expect(w.ours()[k("refresh-attempt-api")]).toBe("2");
    await crashed();
    const second = await w.run();
    expect(second.stderr).toContain("failed: api: failed attempt 3/3 (reverted)");
    expect(image("api-proxy", "proxy")).toBe(pin(old));
    const held = await w.run();
    expect([held.code, held.stderr.includes("locked_out: api: locked_out 3/3")]).toEqual([1, true]);
    expect(image("api-proxy", "proxy")).toBe(pin(old));
    // rearm clears it with the count.
    expect((await w.run(["rearm", "api"])).stderr).toContain("regressed-api-digest");
    expect(w.ours()[k("regressed-api-digest")]).toBeUndefined();
  }, 60_000);

  test("past regressionWindow the unsettled workload is skipped, as before", async () => {
    await verifiedThenCrashing();
    w.writeConfig((c) => {
      c.verifyFor = "300ms";
      c.regressionWindow = "1s";
    });
    await Bun.sleep(2100);
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("skipped: api: skipped 1/3");
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.api.log.filter((e) => e.path.endsWith("/pods"))).toEqual([]);
  }, 30_000);

  test("onFailure: keep counts the regression and leaves the build running", async () => {
    const { bad } = await verifiedThenCrashing();
    w.writeConfig((c) => {
      c.verifyFor = "300ms";
      c.onFailure = "keep";
    });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("onFailure: keep leaves it running");
    expect(image("api-proxy", "proxy")).toBe(pin(bad));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("failed-api-digest")]).toBe(bad);
  }, 30_000);
});
