// Two ticks at the same moment against one store: the scheduled Job and a manual one
// (`kubectl create job --from=cronjob/...`), which concurrencyPolicy: Forbid does not stop. The
// attempt write is the compare-and-swap that must let exactly one of them roll out; race() makes
// the two ticks collide on it every time.
import { afterEach, describe, expect, test } from "bun:test";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import type { RunResult } from "../support/binary.ts";
import type { World } from "../support/world.ts";
import { k, makeScene, outcomeOf, PROXY_PATH, STORE_PATH, verdictsOf } from "./scene.ts";
import { run } from "./spawn.ts";

let world: World | undefined;
afterEach(async () => {
  await world?.stop();
  world = undefined;
});

const WORKLOADS = ["api", "api-proxy", "node-agent"];

/**
 * Starts two ticks at once. The first store write to arrive is held back `ms` before the API
 * server applies it, so the other tick reads the old resourceVersion, writes first, and the held
 * write then meets a 409: the race happens on every run instead of when the scheduler allows.
 */
async function race(w: World, ms: number): Promise<RunResult[]> {
  w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "delay", ms } });
  return Promise.all([run(w), run(w)]);
}

/** The values each attempt write tried to store for `key`'s count, with the answer it got. */
function attemptWrites(w: World, key: string): Array<{ value: string; status: number }> {
  return w.api.log.flatMap((e) => {
    if (e.method !== "PATCH" || e.path !== STORE_PATH) return [];
    const value = JSON.parse(e.body ?? "{}").data?.[`refresh-attempt-${key}`];
    return typeof value === "string" ? [{ value, status: e.status }] : [];
  });
}

/** Successful attempt writes per image: each one counts a rollout towards that image's lockout. */
function storedPer(w: World): Record<string, string[]> {
  return Object.fromEntries(
    ["api", "node-agent"].map((key) => [
      key,
      attemptWrites(w, key)
        .filter((x) => x.status === 200)
        .map((x) => x.value),
    ]),
  );
}

/** Image patches per workload name: each one is a rollout started (or re-sent). */
function patchesPer(w: World): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(WORKLOADS.map((n) => [n, 0]));
  for (const e of w.api.log)
    if (e.method === "PATCH" && e.contentType?.includes("json-patch") && e.body?.includes('/image"'))
      counts[e.path.split("/").pop() as string] = (counts[e.path.split("/").pop() as string] ?? 0) + 1;
  return counts;
}

describe("two ticks, one new digest", () => {
  for (const ms of [250, 500, 750]) {
    test(`first write held ${ms} ms: one rollout, one counted attempt, consistent end state`, async () => {
      const s = await makeScene("changed");
      world = s.w;
      // The winner is still waiting on api-proxy when the loser re-reads after its 409: every
      // other target is settled and the count says 1, exactly when piling on would look reasonable.
      s.w.api.setMode("Deployment", "apps", "api-proxy", "slow", { slowMs: 1200 });
      const results = await race(s.w, ms);
      const outcomes = results.map(outcomeOf).sort();
      const detail = results.map((r) => r.stderr).join("\n---\n");
      // The loser re-reads after its 409, sees the attempt the winner claimed, and stands down.
      expect(outcomes, detail).toEqual(["held", "refreshed"]);
      expect(patchesPer(s.w), detail).toEqual({ api: 1, "api-proxy": 1, "node-agent": 1 });
      // Per image: exactly one counted attempt each, though both ticks wanted both images.
      expect(storedPer(s.w), detail).toEqual({ api: ["1"], "node-agent": ["1"] });
      expect(
        [...attemptWrites(s.w, "api"), ...attemptWrites(s.w, "node-agent")].some((x) => x.status === 409),
        detail,
      ).toBe(true);
      const a = s.w.ours();
      for (const key of ["api", "node-agent"]) {
        expect(a[k(`refresh-attempt-${key}`)], key).toBeUndefined();
        expect(a[k(`refresh-flap-detected-${key}`)], key).toBeUndefined();
      }
      expect(a[k("last-refreshed-api-digest")]).toBe(s.digests.api);
      expect(a[k("last-refreshed-node-agent-digest")]).toBe(s.digests["node-agent"]);
      // The loser's re-read may find a target mid-rollout (the winner's): that image is skipped, its
      // streak counted once (the next tick clears it); any other streak is gone.
      const loser = verdictsOf(results.find((r) => outcomeOf(r) === "held") as RunResult);
      for (const key of ["api", "node-agent"])
        expect(a[k(`skip-streak-${key}`)], `${key}\n${detail}`).toBe(
          loser[key] === "skipped" ? "1" : (undefined as never),
        );
      expect(s.w.image("Deployment", "apps", "api-proxy", "proxy")).toContain(s.digests.api as string);
    }, 30_000);
  }
});

describe("two ticks while flapping", () => {
  test("each race adds exactly one to the count, never skipping one; then one lockout", async () => {
    // Only node-agent changes, and its new build never settles: every tick that rolls it out
    // fails and puts the old build back (onFailure: revert).
    const s = await makeScene("unchanged", (c) => (c.rolloutTimeout = "1s"));
    world = s.w;
    const w = s.w;
    const newDigest = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const old = w.image("DaemonSet", "agents", "node-agent", "agent");
    w.api.failImages("DaemonSet", "agents", "node-agent", [
      `${w.registry.host}/myorg/node-agent@${newDigest}`,
    ]);
    for (const [round, ms] of [400, 600, 800].entries()) {
      w.api.clearLog();
      const results = await race(w, ms);
      const detail = results.map((r) => r.stderr).join("\n---\n");
      // The loser stands down. Its re-read after the 409 finds node-agent mid-rollout (the
      // winner's) and skips it (the settled guard comes first), or, once that rollout is over,
      // sees the winner's claim (held) or, at the maximum, the lockout the count alone decides.
      const standDown = round + 1 >= 3 ? ["locked_out", "skipped"] : ["held", "skipped"];
      // The winner's failure that reaches the maximum announces the lockout on its own tick.
      const winner = round + 1 >= 3 ? "locked_out" : "failed";
      const outcomes = results.map(outcomeOf);
      const won = outcomes.indexOf(winner);
      expect(won, detail).toBeGreaterThanOrEqual(0);
      expect(standDown, detail).toContain(outcomes[1 - won] as string);
      // One attempt per race: the loser stands down rather than count the winner's rollout again.
      // api is in sync: no tick counts anything for it.
      expect(storedPer(w), detail).toEqual({ api: [], "node-agent": [String(round + 1)] });
      expect(w.ours()[k("refresh-attempt-node-agent")]).toBe(String(round + 1));
      expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
      // The winner's patch and its revert; the loser patches nothing.
      expect(patchesPer(w)["node-agent"], detail).toBe(2);
    }
    w.api.clearLog();
    const results = await race(w, 500);
    expect(results.map(outcomeOf)).toEqual(["locked_out", "locked_out"]);
    // A lockout exits 1 on every tick until a human rearms or rejects.
    expect(results.map((r) => r.code)).toEqual([1, 1]);
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBe("3");
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("3");
    // The lockout is node-agent's alone.
    expect(w.ours()[k("refresh-flap-detected-api")]).toBeUndefined();
    // The marker is a transition: one Event, whoever wrote it.
    expect(w.api.events.filter((e) => e.reason === "RefreshLockedOut")).toHaveLength(1);
    // No workload is written; the store only gets the marker and the removal of a skip streak a
    // loser counted while the last rollout was underway.
    expect(patchesPer(w)["node-agent"]).toBe(0);
    const storeWrites = w.api.log.filter((e) => e.method !== "GET" && !e.path.endsWith("/events"));
    for (const e of storeWrites) {
      expect(e.path).toBe(STORE_PATH);
      const keys = Object.keys(JSON.parse(e.body ?? "{}").data ?? {});
      expect(
        keys.every((n) => ["refresh-flap-detected-node-agent", "skip-streak-node-agent"].includes(n)),
        e.body,
      ).toBe(true);
    }
    // Locked out with the DaemonSet healthy on the build it had.
    expect(w.image("DaemonSet", "agents", "node-agent", "agent")).toBe(old);
  }, 60_000);
});

describe("two ticks, one tag rendered over the pin", () => {
  test("the tick that lost the race stands down quietly: one re-pin, no PinContested, no Warning of its own", async () => {
    const s = await makeScene("unchanged");
    world = s.w;
    const w = s.w;
    // Helm renders the tag over api-proxy's pin. The winner's workload patch is held back, so
    // the loser, re-reading after its 409, finds the winner's count and repin streak with the
    // tag still there and the workload settled: the moment a false contest used to be called.
    w.api.setImage("Deployment", "apps", "api-proxy", "proxy", `${w.registry.host}/myorg/api:stable`, {
      manager: "helm",
    });
    await waitFor(w.api, "Deployment", "apps", "api-proxy", settled);
    w.api.faults.add({ method: "PATCH", path: PROXY_PATH, times: 1, fault: { type: "delay", ms: 800 } });
    w.api.clearLog();
    const results = await race(w, 500);
    const detail = results.map((r) => r.stderr).join("\n---\n");
    expect(results.map(outcomeOf).sort(), detail).toEqual(["held", "refreshed"]);
    const loser = results.find((r) => outcomeOf(r) === "held") as RunResult;
    expect(loser.stderr, detail).toContain("reason=attempt_claimed");
    expect(loser.stderr).not.toContain("PIN CONTESTED");
    expect(patchesPer(w), detail).toEqual({ api: 0, "api-proxy": 1, "node-agent": 0 });
    expect(w.api.events.map((e) => e.reason)).not.toContain("PinContested");
    expect(w.ours()[k("repin-streak-api")]).toBe("1");
  }, 30_000);
});
