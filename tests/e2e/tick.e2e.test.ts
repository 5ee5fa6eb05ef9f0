// One tick, step by step (docs/how-a-tick-decides.md), rule by rule, against the compiled binary
// over real HTTPS.
import { describe, expect, test } from "bun:test";
import { patch, settled, waitFor } from "../../sim/apiserver/driver.ts";
import {
  API_REFRESH_STORY,
  apiRequests,
  recorded,
  replaceWorkload,
  STORE_PATH,
  storeKey,
  TARGET_READS,
  type World,
  writeStory,
  writes,
} from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

describe("first observation and no-op", () => {
  test("first observation records every digest and touches no workload", async () => {
    const before = w.image("Deployment", "apps", "api", "api");
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("recorded:");
    const a = w.ours();
    expect(a[k("last-refreshed-api-digest")]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a[k("last-refreshed-node-agent-digest")]).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The first write creates the store: one POST, no workload touched.
    expect(writes(w.api)).toEqual(["POST /api/v1/namespaces/image-refresh/configmaps"]);
    expect(w.image("Deployment", "apps", "api", "api")).toBe(before);
  });

  test("a healthy unchanged installation makes one GET per distinct workload and writes nothing", async () => {
    await recorded(w);
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("noop:");
    // One round: the store and each distinct target workload once, concurrently.
    expect(apiRequests(w.api)).toEqual(TARGET_READS);
    // one challenge, one token request carrying both scopes, one HEAD per repository
    expect(w.registry.counts()).toMatchObject({ token: 1, head: 2, get: 0 });
    expect(w.registry.counts().challenge).toBeLessThanOrEqual(1);
  });

  test("with registry.token configured a no-op tick makes exactly the limit's requests", async () => {
    w.writeConfig((c) => (c.registry.token = { realm: `${w.registry.url}/token`, service: "sim-registry" }));
    await recorded(w);
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("noop:");
    expect(apiRequests(w.api)).toEqual(TARGET_READS);
    expect(w.registry.counts()).toEqual({ challenge: 0, token: 1, head: 2, get: 0 });
  });
});

describe("refresh", () => {
  test("writes in order: attempt, one patch per workload, reset, digest record, Event", async () => {
    await recorded(w);
    const before = w.ours()[k("last-refreshed-api-digest")];
    const digest = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("refreshed:");
    expect(writeStory(w.api)).toEqual(API_REFRESH_STORY);
    const patches = w.api.log.filter((e) => e.method === "PATCH" && e.path === STORE_PATH && e.status < 300);
    const bodies = patches.map((e) => JSON.parse(e.body ?? "{}"));
    expect(bodies[0].data["refresh-attempt-api"]).toBe("1");
    expect(bodies[0].data["refresh-attempt-traceparent-api"]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    // The build tried is stored with the attempt, as started: a tick killed now still names it,
    // but only a rollout seen to fail writes failed-api-digest.
    expect(bodies[0].data["last-attempt-api"]).toMatch(new RegExp(`^${digest} started \\S+Z$`));
    expect(bodies[0].data["failed-api-digest"]).toBeUndefined();
    expect(bodies[0].metadata.resourceVersion).toBeString();
    // The reset: a separate compare-and-swap that removes the count and the traceparent (no
    // failed digest was written) and says how the attempt ended.
    expect(bodies[1]).toEqual({
      metadata: { resourceVersion: expect.any(String) },
      data: {
        "refresh-attempt-api": null,
        "refresh-attempt-traceparent-api": null,
        "last-attempt-api": expect.stringMatching(new RegExp(`^${digest} verified \\S+Z$`)),
      },
    });
    // The record: the verified build, the one it replaced (what a regression goes back to) and
    // when it was verified, by the API server's clock.
    expect(bodies[2].data).toEqual({
      "last-refreshed-api-digest": digest,
      "previous-api-digest": before,
      "verified-api-at": expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    expect(
      w.api.events
        .filter((e) => e.reason === "Refreshed")
        .map((e) => e.regarding.name)
        .sort(),
    ).toEqual(["api", "api-proxy"]);
    const pinned = `${w.registry.host}/myorg/api@${digest}`;
    expect(w.image("Deployment", "apps", "api", "api")).toBe(pinned);
    expect(w.image("Deployment", "apps", "api-proxy", "proxy")).toBe(pinned);
    expect(w.image("Deployment", "apps", "api", "sidecar")).toBe("envoy:1");
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.api.events.at(-1)).toMatchObject({ type: "Normal", reason: "Refreshed" });
  });

  test("two containers of one workload go in one patch", async () => {
    w.writeConfig((c) => c.images[0].targets.push({ kind: "Deployment", name: "api", container: "sidecar" }));
    // The sidecar runs the same build as the app container (else it is a target_mismatch).
    w.api.setImage("Deployment", "apps", "api", "sidecar", w.image("Deployment", "apps", "api", "api"));
    await waitFor(w.api, "Deployment", "apps", "api", settled);
    await recorded(w);
    const digest = w.registry.push("myorg/api", "stable");
    expect((await w.run()).code).toBe(0);
    expect(writeStory(w.api).filter((x) => x === "image api")).toHaveLength(1);
    expect(w.image("Deployment", "apps", "api", "sidecar")).toBe(`${w.registry.host}/myorg/api@${digest}`);
  });

  test("two workloads following one repository cost one HEAD", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    expect((await w.run()).code).toBe(0);
    const heads = w.registry.log.filter((e) => e.method === "HEAD").map((e) => e.path);
    expect(heads.sort()).toEqual(["/v2/myorg/api/manifests/stable", "/v2/myorg/node-agent/manifests/stable"]);
  });

  test("a missing container holds the refresh before any write", async () => {
    await recorded(w);
    w.writeConfig((c) => (c.images[0].targets[1].container = "nope"));
    w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(1);
    // The containers that do exist are listed, so a typo in the config is found at once.
    expect(r.stderr).toContain(
      'Deployment apps/api-proxy has no container named "nope" (its containers: "proxy")',
    );
    expect(writes(w.api)).toEqual([]);
    const s = await w.run(["status", "api"]);
    expect(s.stdout).toContain('ERROR has no container named "nope" (its containers: "proxy")');
  });

  // Patching such a target would start no rollout (OnDelete replaces pods only when they are
  // deleted; a paused Deployment does not roll), so the wait could only fail and count an
  // attempt for every new build until the lockout. kubectl refuses both up front too.
  test("an OnDelete DaemonSet target holds the refresh before any write, naming why", async () => {
    replaceWorkload(w, {
      kind: "DaemonSet",
      namespace: "agents",
      name: "node-agent",
      containers: [{ name: "agent", image: `${w.registry.host}/myorg/node-agent:stable` }],
      updateStrategy: "OnDelete",
    });
    await recorded(w);
    w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("outcome=held reason=target_unavailable");
    expect(r.stderr).toContain(
      "DaemonSet agents/node-agent: rollout status is only available for RollingUpdate strategy type",
    );
    expect(writes(w.api)).toEqual([]);
  });

  test("a paused Deployment target holds the refresh before any write, naming why", async () => {
    const proxy = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";
    expect(
      (await patch(w.api, proxy, "application/merge-patch+json", { spec: { paused: true } })).status,
    ).toBe(200);
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Deployment apps/api-proxy: the deployment is paused");
    expect(writes(w.api)).toEqual([]);
  });
});

describe("flapping workload", () => {
  test("attempts 1, 2, 3, the third announcing the lockout, which holds until rearm", async () => {
    await recorded(w);
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    // A bad build: its pods never become available; the revert to the old one settles.
    w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    for (const n of [1, 2]) {
      const r = await w.run();
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("failed:");
      expect(w.ours()[k("refresh-attempt-node-agent")]).toBe(String(n));
      expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBeUndefined();
    }
    w.api.clearLog();
    // The third failed attempt reaches the maximum: the lockout is announced on this tick.
    const lock = await w.run();
    // A lockout waits for a human, so the Job says so: exit 1, every tick while it lasts.
    expect(lock.code).toBe(1);
    expect(lock.stderr).toContain("locked_out:");
    expect(lock.stderr).toContain("image-refresh rearm node-agent");
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("3");
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBe("3");
    expect(w.book()["failed-node-agent-digest"]).toBe(bad);
    expect(w.api.events.filter((e) => e.reason === "RefreshLockedOut").map((e) => e.regarding.name)).toEqual([
      "node-agent",
    ]);
    w.api.clearLog();
    // Announced once: the next tick holds without a write or an Event.
    const held = await w.run();
    expect(held.code).toBe(1);
    expect(held.stderr).toContain("locked_out:");
    expect(writes(w.api)).toEqual([]);
    const rearm = await w.run(["rearm"]);
    expect(rearm.code).toBe(0);
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBeUndefined();
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBeUndefined();
    w.api.failImages("DaemonSet", "agents", "node-agent", []);
    const again = await w.run();
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("refreshed:");
    // Each failed attempt waits out rolloutTimeout and reverts: several seconds of ticks.
  }, 30_000);

  test("success after earlier failures resets the counter", async () => {
    await recorded(w);
    w.setBook({ "refresh-attempt-api": "2" });
    w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(0);
    const body = JSON.parse(
      w.api.log.filter((e) => e.method === "PATCH" && e.path === STORE_PATH)[0]?.body ?? "{}",
    );
    expect(body.data["refresh-attempt-api"]).toBe("3");
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
  });

  test("ProgressDeadlineExceeded fails fast, well before rolloutTimeout", async () => {
    w.writeConfig((c) => (c.rolloutTimeout = "30s"));
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
    const started = Date.now();
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("exceeded its progress deadline");
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
  });

  test("an untrusted counter holds the tick: exit 1, no rollout", async () => {
    await recorded(w);
    w.setBook({ "refresh-attempt-api": "2abc" });
    w.registry.push("myorg/api", "stable");
    w.api.clearLog();
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("held:");
    expect(r.stderr).toContain("rearm");
    expect(writes(w.api)).toEqual([]);
  });
});

describe("settled guard and skip streak, per image", () => {
  test("below, at and past the ceiling: only the unsettled workload's image freezes; one Event about that workload", async () => {
    await recorded(w);
    w.api.setMode("Deployment", "apps", "api", "unsettled");
    w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const first = await w.run();
    expect(first.code).toBe(0);
    expect(first.stderr).toContain("api: Deployment apps/api not settled");
    expect(first.stderr).toContain("skip 1/3");
    // The DaemonSet's image has nothing to do with it: it refreshes.
    expect(first.stderr).toContain("node-agent: refreshed");
    expect(w.book()["skip-streak-api"]).toBe("1");
    expect((await w.run()).code).toBe(0);
    const frozen = await w.run();
    expect(frozen.code).toBe(1);
    expect(frozen.stderr).toContain("FROZEN: api: Deployment apps/api not settled");
    const past = await w.run();
    expect(past.code).toBe(1);
    expect(w.book()["skip-streak-api"]).toBe("4");
    const events = w.api.events.filter((e) => e.reason === "RefreshFrozen");
    expect(events).toHaveLength(1);
    expect(events[0].regarding).toMatchObject({ kind: "Deployment", namespace: "apps", name: "api" });
  });

  test("settling removes the streak; a failed removal is a warning and the tick goes on", async () => {
    await recorded(w);
    w.setBook({ "skip-streak-api": "2" });
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "status", code: 500 } });
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("WARNING: cannot remove streaks or markers");
    const again = await w.run();
    expect(again.code).toBe(0);
    expect(w.book()["skip-streak-api"]).toBeUndefined();
  });

  test("a skip that cannot be counted fails the tick", async () => {
    await recorded(w);
    w.api.setMode("Deployment", "apps", "api", "unsettled");
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, fault: { type: "status", code: 500 } });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot write the streak of api");
  });
});
