// A build that runs out of its progress deadline, reverted: the simulated deployment controller
// keeps that ProgressDeadlineExceeded while it observes the revert (which brings the old
// ReplicaSet back), as the real one does, and the revert's wait must not take it for its own
// verdict. The revert settles and says so; a revert that stalls again still fails fast.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { PREFIX, recorded, startWorld, type World } from "../support/world.ts";

const k = (name: string) => `${PREFIX}/${name}`;

let w: World;
beforeEach(async () => {
  w = await startWorld();
  w.writeConfig((c) => (c.rolloutTimeout = "30s"));
});
afterEach(async () => {
  await w.stop();
});

const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const events = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300)
    .map((e) => JSON.parse(e.body ?? "{}"))
    .map((e) => `${e.reason} ${e.regarding?.name}`);

async function deadlineOnProxy(): Promise<string> {
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const bad = w.registry.push("myorg/api", "stable");
  w.api.failImages("Deployment", "apps", "api-proxy", [pin(bad)], "deadline");
  w.api.clearLog();
  return old;
}

test("the revert after a progress deadline settles: reverted, fast, RolloutReverted on both", async () => {
  const old = await deadlineOnProxy();
  const started = Date.now();
  const r = await w.run();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("exceeded its progress deadline");
  expect(r.stderr).not.toContain("the revert did not settle");
  expect(r.stderr).toContain("reason=rollout_failed_reverted");
  expect(r.stderr).toContain("failed: api: failed (reverted)");
  // Well inside rolloutTimeout (30 s): both waits ended on what the controller said.
  expect(Date.now() - started).toBeLessThan(15_000);
  expect(w.image("Deployment", "apps", "api-proxy", "proxy")).toBe(pin(old));
  expect(w.image("Deployment", "apps", "api", "api")).toBe(pin(old));
  expect(events()).toEqual(["RolloutFailed api-proxy", "RolloutReverted api-proxy", "RolloutReverted api"]);
  expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
});

// The simulator's revert here progresses, then stalls: the controller writes a condition of its
// own. One that makes no progress at all gets none on the real controller and ends at
// rolloutTimeout (tests/real/rollouts-deadline.real.test.ts).
test("a revert that progresses, then stalls, reaches a deadline of its own and fails fast: revert_failed", async () => {
  await deadlineOnProxy();
  w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
  const started = Date.now();
  const r = await w.run();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("reason=revert_failed");
  expect(r.stderr).toContain("the revert did not settle: Deployment apps/api-proxy (deadline_exceeded)");
  expect(Date.now() - started).toBeLessThan(15_000);
  expect(events()).toContain("RevertFailed api-proxy");
});
