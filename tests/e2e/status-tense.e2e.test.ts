// `status` tells what happened apart from what will happen: the last attempt (its build, when,
// how it ended) in the past tense, the next tick's verdict in the future tense; never
// "REFRESHED" for a refresh not yet done. After a failed rollout whose count still stands it exits 1.
import { describe, expect, test } from "bun:test";
import { recorded, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

let w: World;
worldPerTest((world) => {
  w = world;
});

describe("status tells the last attempt (past) from the next tick (future)", () => {
  const agentBad = () => {
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    // A bad build: its pods never become available; the revert to the old one settles.
    w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${bad}`]);
    return bad;
  };

  test("a build due and never tried: REFRESH DUE, the next tick rolls it out, no last attempt; exit 0", async () => {
    await recorded(w);
    const next = w.registry.push("myorg/api", "stable");
    const r = await w.run(["status", "api"]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain("image api (myorg/api): REFRESH DUE (digest_changed)");
    expect(r.stdout).toContain(`  the next tick rolls out ${next} (attempt 1/3)`);
    expect(r.stdout).not.toContain("REFRESHED");
    expect(r.stdout).not.toContain("last attempt:");
  });

  test("after a failed and reverted rollout: it failed and was reverted; the next tick retries it; exit 1", async () => {
    await recorded(w);
    const bad = agentBad();
    expect((await w.run()).code).toBe(1);
    const r = await w.run(["status", "node-agent"]);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(
        `  last attempt: build ${bad} at \\S+Z failed: its rollout did not settle, and it was reverted to the images the workloads had before`,
      ),
    );
    expect(r.stdout).toContain(`  the next tick rolls out ${bad} (attempt 2/3)`);
    expect(r.stdout).not.toContain("REFRESHED");
    const json = JSON.parse((await w.run(["status", "node-agent", "--json"])).stdout);
    expect(json.images[0].lastAttempt).toMatchObject({ digest: bad, ending: "reverted", failed: true });
  }, 30_000);

  test("after a verified refresh: the last attempt was verified, the next tick has nothing to do; exit 0", async () => {
    await recorded(w);
    const next = w.registry.push("myorg/api", "stable");
    expect((await w.run()).code).toBe(0);
    const r = await w.run(["status", "api"]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain("image api (myorg/api): NOOP (unchanged)");
    expect(r.stdout).toMatch(
      new RegExp(`  last attempt: build ${next} at \\S+Z rolled out and was verified`),
    );
    expect(r.stdout).toContain("  the next tick will have nothing to do");
  });
});
