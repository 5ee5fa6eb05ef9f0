// The per-image model end to end, on the compiled binary against the simulated cluster: one
// image's trouble never holds back another, images that share a workload move together, legacy
// counters carry over and migrate, an image the registry cannot resolve is never a quiet noop,
// and a rejected build is never rolled out while the next one is.
import { describe, expect, test } from "bun:test";
import {
  API_REFRESH_STORY,
  recorded,
  STORE_PATH,
  shareApiProxy,
  storeKey,
  type World,
  writeStory,
} from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;
const AGENT_MANIFESTS = /\/v2\/myorg\/node-agent\/manifests\//;

let w: World;
worldPerTest((world) => {
  w = world;
});

/** The tick's last line: `<outcome>: api: …; node-agent: …`. */
function lastLine(stderr: string): string {
  return (
    stderr
      .trim()
      .split("\n")
      .at(-1)
      ?.replace(/^\[image-refresh\] (ERROR: |WARNING: )?/, "")
      .replace(/ outcome=\w+ reason=\w+$/, "") ?? ""
  );
}

describe("isolation", () => {
  test("a flapping DaemonSet image locks out while an unrelated image refreshes and records in the same tick", async () => {
    await recorded(w);
    // A bad build: its pods never become available, so each attempt is reverted to the old one.
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    for (const n of [1, 2]) {
      const r = await w.run();
      expect(r.code).toBe(1);
      expect(w.ours()[k("refresh-attempt-node-agent")]).toBe(String(n));
    }
    // The third failure and a new api build in the same tick: api refreshes beside the failure.
    const api = w.registry.push("myorg/api", "stable");
    w.api.clearLog();
    const third = await w.run();
    expect(third.code).toBe(1);
    // The failure that reaches the maximum announces the lockout on its own tick.
    expect(lastLine(third.stderr)).toBe("locked_out: api: refreshed; node-agent: locked_out 3/3");
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBe("3");
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(api);
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("3");
    expect(w.image("Deployment", "apps", "api-proxy", "proxy")).toBe(`${w.registry.host}/myorg/api@${api}`);
    // Locked out now; yet another api build still goes through, in the same tick as the lockout.
    const api2 = w.registry.push("myorg/api", "stable");
    w.api.clearLog();
    const locked = await w.run();
    // The lockout fails the Job (exit 1) while the other image still refreshes in the same tick.
    expect(locked.code).toBe(1);
    expect(lastLine(locked.stderr)).toBe("locked_out: api: refreshed; node-agent: locked_out 3/3");
    // The marker and its Event went with the third failure: this tick announces nothing again.
    expect(writeStory(w.api)).toEqual(API_REFRESH_STORY);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(api2);
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBe("3");
    // Each failed attempt waits out rolloutTimeout and reverts: several seconds of ticks.
  }, 30_000);

  test("images that share a workload move together: one patch, one verdict, one failure for both", async () => {
    shareApiProxy(w, {
      proxy: `${w.registry.host}/myorg/api:stable`,
      agent: `${w.registry.host}/myorg/node-agent:stable`,
    });
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    const r = await w.run();
    expect(r.code).toBe(1);
    // The DaemonSet's failure fails node-agent, and api with it: they share api-proxy; both
    // workloads go back to what they ran (newest first: the DaemonSet, then api-proxy).
    expect(lastLine(r.stderr)).toBe("failed: api: failed (reverted); node-agent: failed (reverted)");
    expect(r.stderr).toContain(
      "api moves with node-agent: rollout of DaemonSet agents/node-agent did not settle",
    );
    const proxyPatches = w.api.log.filter(
      (e) => e.method === "PATCH" && e.path.endsWith("/deployments/api-proxy"),
    );
    // Forward, then back.
    expect(proxyPatches).toHaveLength(2);
    expect(
      JSON.parse(proxyPatches[0]?.body ?? "[]").filter((o: { op: string }) => o.op === "replace"),
    ).toHaveLength(2);
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("1");
  });
});

describe("unresolved is never noop", () => {
  test("a tag the registry does not have: unresolved below the ceiling, stale exit 1 at it, one Event, streak removed on recovery", async () => {
    w.writeConfig((c) => (c.maxUnresolvedTicks = 3));
    // node-agent's tag is missing (deleted, or not pushed yet); its workload names the right repository.
    const notFound = { type: "status", code: 404, reason: "MANIFEST_UNKNOWN" } as const;
    w.registry.faults.add({ method: "HEAD", path: AGENT_MANIFESTS, fault: notFound });
    const outcomes: Array<[number, string]> = [];
    for (let i = 0; i < 4; i++) {
      const r = await w.run();
      outcomes.push([r.code, lastLine(r.stderr)]);
    }
    expect(outcomes).toEqual([
      [0, "unresolved: api: recorded; node-agent: unresolved 1/3 (not_found)"],
      [0, "unresolved: api: noop; node-agent: unresolved 2/3 (not_found)"],
      [1, "stale: api: noop; node-agent: stale 3/3 (not_found)"],
      // The streak keeps counting (4 in the store), but is shown at its max.
      [1, "stale: api: noop; node-agent: stale 3/3 (not_found)"],
    ]);
    expect(w.api.events.filter((e) => e.reason === "ImageStale")).toHaveLength(1);
    expect(w.ours()[k("unresolved-streak-node-agent")]).toBe("4");
    w.registry.faults.clear();
    const fixed = await w.run();
    expect(fixed.code).toBe(0);
    expect(lastLine(fixed.stderr)).toBe("recorded: api: noop; node-agent: recorded");
    expect(w.ours()[k("unresolved-streak-node-agent")]).toBeUndefined();
  });

  // A configured repository that the target does not run is the config pointing at
  // the wrong container, held whatever the registry says (before, a typo'd repository was only
  // unresolved, exit 0, until it went stale).
  test("a typo'd repository is a target mismatch: held, exit 1, from the first tick, never patched", async () => {
    w.writeConfig((c) => {
      c.images[1].key = "node-agent";
      c.images[1].repository = "myorg/nodeagent";
    });
    const before = w.image("DaemonSet", "agents", "node-agent", "agent");
    for (const first of ["recorded", "noop"]) {
      const r = await w.run();
      expect(r.code).toBe(1);
      // The unresolved streak counts whatever else holds the image.
      expect(lastLine(r.stderr)).toBe(
        `held: api: ${first}; node-agent: held 1/8 (not_found)`.replace(
          "1/8",
          first === "recorded" ? "1/8" : "2/8",
        ),
      );
      expect(r.stderr).toContain("reason=target_mismatch");
    }
    expect(w.image("DaemonSet", "agents", "node-agent", "agent")).toBe(before);
    expect(w.ours()[k("last-refreshed-node-agent-digest")]).toBeUndefined();
  });

  test("a refused pull secret (every image 401) is never noop, and the streaks are counted", async () => {
    await recorded(w);
    w.registry.faults.add({ path: "/token", fault: { type: "status", code: 401 } });
    w.api.clearLog();
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(lastLine(r.stderr)).toMatch(
      /^unresolved: api: unresolved 1\/8 \(\w+\); node-agent: unresolved 1\/8 \(\w+\)$/,
    );
    expect(writeStory(w.api)).toEqual(["unresolved api=1, unresolved node-agent=1"]);
  });

  test("a streak that cannot be counted fails the tick like an uncounted skip", async () => {
    await recorded(w);
    w.registry.faults.add({ path: AGENT_MANIFESTS, fault: { type: "status", code: 404 } });
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, fault: { type: "status", code: 500 } });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("reason=streak_not_counted");
  });
});

describe("reject", () => {
  test("a rejected build never rolls out; the next build does", async () => {
    await recorded(w);
    const before = w.image("DaemonSet", "agents", "node-agent", "agent");
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    expect((await w.run(["reject", "node-agent"])).code).toBe(0);
    for (let i = 0; i < 2; i++) {
      w.api.clearLog();
      const r = await w.run();
      expect(r.code).toBe(0);
      expect(lastLine(r.stderr)).toBe("paused: api: noop; node-agent: paused");
      expect(writeStory(w.api)).toEqual([]);
    }
    expect(w.image("DaemonSet", "agents", "node-agent", "agent")).toBe(before);
    const good = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const r = await w.run();
    expect(lastLine(r.stderr)).toBe("refreshed: api: noop; node-agent: refreshed");
    expect(w.image("DaemonSet", "agents", "node-agent", "agent")).toBe(
      `${w.registry.host}/myorg/node-agent@${good}`,
    );
    expect(good).not.toBe(bad);
    // Once a newer build is recorded, the rejection is history.
    expect(w.ours()[k("rejected-node-agent-digest")]).toBeUndefined();
  });
});

test("JSON logs carry image, outcome, reason, digest and attempt as fields", async () => {
  await recorded(w);
  const digest = w.registry.push("myorg/api", "stable");
  const r = await w.run(["tick", "--log-format", "json"]);
  expect(r.code).toBe(0);
  const lines = r.stderr
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const verdict = lines.find((l) => l.image === "api" && l.outcome === "refreshed");
  expect(verdict).toMatchObject({ image: "api", outcome: "refreshed", reason: "digest_changed", digest });
  expect(lines.find((l) => l.image === "api" && l.attempt === 1)).toBeDefined();
  // Every line whose message names an attempt carries that number, not the counter after its reset.
  const named = lines.flatMap((l) => {
    const m = /attempt (\d+)\/\d+/.exec(l.msg);
    return m ? [[l.msg, l.attempt, Number(m[1])]] : [];
  });
  expect(named.length).toBeGreaterThanOrEqual(2);
  for (const [msg, field, inMessage] of named)
    expect({ msg, attempt: field }).toEqual({ msg, attempt: inMessage });
  expect(lines.at(-1)).toMatchObject({
    outcome: "refreshed",
    msg: "refreshed: api: refreshed; node-agent: noop",
  });
});
