// The verification window end to end: a build whose pods become Ready and crash after their
// warm-up is failed and reverted by the tick that rolled it out (counted, an Event naming the pod
// and what it did); a healthy build is verified, then recorded; verifyFor 0s keeps the instant
// judgement; a build that crashes at once fails fast instead of waiting out rolloutTimeout.
import { describe, expect, test } from "bun:test";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const proxyImage = () => w.image("Deployment", "apps", "api-proxy", "proxy");
const events = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300)
    .map((e) => JSON.parse(e.body ?? "{}"))
    .map((e) => ({ reason: e.reason as string, name: e.regarding?.name as string, note: e.note as string }));
const podRequests = () => w.api.log.filter((e) => e.path === "/api/v1/namespaces/apps/pods");

/** A new build of myorg/api whose pods on api-proxy fail as `how` says; api takes it fine. */
async function newBuild(how?: Parameters<World["api"]["failImages"]>[4]) {
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const next = w.registry.push("myorg/api", "stable");
  if (how) w.api.failImages("Deployment", "apps", "api-proxy", [pin(next)], how);
  w.api.clearLog();
  return { old, next };
}

describe("verifyFor", () => {
  test("Ready, then crashing after warm-up: reverted by the tick that rolled it out, failed, counted, an Event names the pod", async () => {
    w.writeConfig((c) => (c.verifyFor = "1s"));
    const { old, next } = await newBuild({ crashAfterMs: 300 });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("failed: api: failed (reverted)");
    expect(r.stderr).toContain("rollout of Deployment apps/api-proxy failed its verification (unverified)");
    expect(r.stderr).toMatch(
      /pod apps\/api-proxy-\w+-\w+: container proxy (waits in CrashLoopBackOff|restarted)/,
    );
    expect(proxyImage()).toBe(pin(old));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("failed-api-digest")]).toBe(next);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(old);
    const failed = events().find((e) => e.reason === "RolloutFailed");
    expect(failed?.name).toBe("api-proxy");
    expect(failed?.note).toMatch(/pod apps\/api-proxy-\w+-\w+: container proxy/);
    // The new pods were listed and watched with the Deployment's selector.
    const selectors = new Set(podRequests().map((e) => e.query.labelSelector));
    expect([...selectors].sort()).toEqual(["app=api", "app=api-proxy"]);
  }, 20_000);

  test("a healthy build is verified, then recorded", async () => {
    w.writeConfig((c) => (c.verifyFor = "500ms"));
    const { next } = await newBuild();
    const started = Date.now();
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("refreshed: api: refreshed");
    expect(r.stderr).toContain("verified for 500ms");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000); // two workloads, each watched 500 ms
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(next);
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
  }, 20_000);

  test("verifyFor 0s keeps the instant judgement: the crash after warm-up is recorded as good, no verification", async () => {
    w.writeConfig((c) => (c.verifyFor = "0s"));
    const { next } = await newBuild({ crashAfterMs: 300 });
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("refreshed: api: refreshed");
    expect(r.stderr).not.toContain("verifying");
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(next);
  }, 20_000);

  for (const [how, shows] of [
    // As on a real node, the first crash restarts at once: the restart is the first evidence.
    ["crashloop", "restarted (restart count 0 -> 1)"],
    ["pull", "cannot pull its image"],
  ] as const) {
    test(`a build that fails at once (${how}) fails fast, long before rolloutTimeout`, async () => {
      w.writeConfig((c) => (c.rolloutTimeout = "30s"));
      const { old } = await newBuild(how);
      const started = Date.now();
      const r = await w.run();
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("rollout of Deployment apps/api-proxy failed: a new pod crashed (crashed)");
      expect(r.stderr).toContain(`container proxy ${shows}`);
      expect(proxyImage()).toBe(pin(old));
      expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    }, 20_000);
  }
});
