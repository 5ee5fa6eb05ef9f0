// A rollout wait gives up after rolloutTimeout, even behind a proxy that buffers chunked responses:
// every watch is answered with headers and then nothing, so the only observation before the
// deadline is the LIST right after the patch. The binary must take the verdict at the deadline
// from a fresh read: a rollout that settled 100 ms after the patch is refreshed, not failed.
import { describe, expect, test } from "bun:test";
import { API_REFRESH_STORY, recorded, storeKey, type World, writeStory } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest(
  (world) => {
    w = world;
  },
  async (world) => {
    // One second per rollout: the watch asks for timeoutSeconds=1 and is only abandoned by the
    // client's watchdog 2 s later, so the deadline always comes first.
    world.writeConfig((c) => (c.rolloutTimeout = "1s"));
    await recorded(world);
    world.api.faults.add({ method: "GET", path: /watch=1/, fault: { type: "silent" } });
  },
);

const watches = () => w.api.log.filter((e) => e.query.watch);

describe("a rollout's verdict at its deadline, behind a watch that never answers", () => {
  test("workloads that settle 100 ms after their patch are refreshed", async () => {
    for (const name of ["api", "api-proxy"])
      w.api.setMode("Deployment", "apps", name, "slow", { slowMs: 100 });
    const digest = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.stderr).toContain("refreshed:");
    expect(r.code).toBe(0);
    expect(writeStory(w.api)).toEqual(API_REFRESH_STORY);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(digest);
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    // The watches really said nothing: the verdict came from the GET at each deadline.
    expect(watches().length).toBeGreaterThanOrEqual(2);
    for (const e of watches()) expect(e.fault).toBe("silent");
  });

  test("a workload that never settles still fails at the deadline and counts the attempt", async () => {
    w.api.setMode("Deployment", "apps", "api", "slow", { slowMs: 100 });
    // Settled before the tick (or the guard would skip the image); its new pods never become available.
    const digest = w.registry.push("myorg/api", "stable");
    w.api.failImages("Deployment", "apps", "api-proxy", [`${w.registry.host}/myorg/api@${digest}`]);
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("rollout of Deployment apps/api-proxy did not settle (timeout)");
    expect(r.stderr).toContain('Waiting for deployment "api-proxy" rollout to finish');
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("last-refreshed-api-digest")]).not.toBe(digest);
  });
});
