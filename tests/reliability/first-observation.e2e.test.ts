// First-observation digests are recorded in one PATCH if nothing else wrote them, also when the
// same tick's refresh of another image fails or is held. Otherwise the image's next build would
// itself pass for a first observation, and its workloads would never be re-imaged.
import { afterEach, describe, expect, test } from "bun:test";
import { pinTargets, type World } from "../support/world.ts";
import { k, makeScene, OLD, outcomeOf } from "./scene.ts";

let world: World | undefined;
afterEach(async () => {
  await world?.stop();
  world = undefined;
});

describe("first-observation digests are recorded if nothing else wrote them", () => {
  test("one image changed and its rollout fails: the other image seen for the first time is still recorded", async () => {
    const s = await makeScene("first");
    world = s.w;
    // api was recorded before (OLD) and changed; node-agent has never been recorded.
    s.w.setBook({ [k("last-refreshed-api-digest")]: OLD });
    await pinTargets(s.w, { api: OLD });
    s.w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
    const r = await s.w.run();
    expect(r.code).toBe(1);
    expect(outcomeOf(r)).toBe("failed");
    expect(s.w.ours()[k("refresh-attempt-api")]).toBe("1");
    // node-agent had nothing due: no count of its own.
    expect(s.w.ours()[k("refresh-attempt-node-agent")]).toBeUndefined();
    // Nothing else wrote node-agent's first observation: the record step must have.
    expect(s.w.ours()[k("last-refreshed-node-agent-digest")]).toBe(s.digests["node-agent"]);
  }, 30_000);

  test("one image changed but the refresh is held (untrusted counter): the first-seen image is still recorded", async () => {
    const s = await makeScene("first");
    world = s.w;
    s.w.setBook({
      [k("last-refreshed-api-digest")]: OLD,
      [k("refresh-attempt-api")]: "x",
    });
    await pinTargets(s.w, { api: OLD });
    const r = await s.w.run();
    expect(r.code).toBe(1);
    expect(outcomeOf(r)).toBe("held");
    expect(s.w.ours()[k("last-refreshed-node-agent-digest")]).toBe(s.digests["node-agent"]);
  }, 30_000);

  test("first observation lost on a failed tick lets a later push go unrefreshed", async () => {
    const s = await makeScene("first");
    world = s.w;
    s.w.setBook({ [k("last-refreshed-api-digest")]: OLD });
    await pinTargets(s.w, { api: OLD });
    s.w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
    expect((await s.w.run()).code).toBe(1);
    // A new node-agent build lands before the next tick; the api rollout is then fixed.
    const pushed = s.w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    s.w.api.setMode("Deployment", "apps", "api-proxy", "healthy");
    s.w.api.clearLog();
    const r2 = await s.w.run();
    expect(r2.code).toBe(0);
    // node-agent's pods run the build first observed; the new build must roll them.
    expect(s.w.image("DaemonSet", "agents", "node-agent", "agent")).toContain(pushed);
  }, 30_000);
});
