// Blame only the build: a workload patch the API server refuses before anything changed is not an
// attempt of the build (held with the API's reason, the count given back in the same tick,
// nothing toward a lockout, no failed build named); and only a build seen to fail is called
// failed (an attempt whose tick died, or whose write's answer was lost, is told as abandoned).
import { describe, expect, test } from "bun:test";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import type { RbacRule } from "../../sim/apiserver/index.ts";
import { start, until } from "../reliability/spawn.ts";
import { recorded, STATE_PATH, STORE_PATH, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

let w: World;
worldPerTest((world) => {
  w = world;
});

const USER = "system:serviceaccount:image-refresh:image-refresh";
/** Everything the tick does, except `patch` on Deployments: a Role that lost one verb. */
const WITHOUT_PATCH: RbacRule[] = [
  { apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "watch", "create"] },
  { apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] },
  { apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["patch"] },
];
const OLD_BAD = `sha256:${"b".repeat(64)}`;

const line = (stderr: string, key: string) =>
  stderr.split("\n").find((l) => l.includes(`image=${key} outcome=`)) ?? "";

describe("a workload patch refused before anything changed", () => {
  test("403: held naming the verb, resource and Role; the count given back; five ticks change nothing", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.setRbac({ user: USER, rules: WITHOUT_PATCH });
    for (let tick = 1; tick <= 5; tick++) {
      w.registry.push("myorg/node-agent", "stable");
      const r = await w.run();
      expect(r.code, r.stderr).toBe(1);
      const api = line(r.stderr, "api");
      expect(api, r.stderr).toContain("outcome=held reason=patch_refused");
      expect(api).toContain("grant `patch` on deployments.apps in apps");
      expect(api).toContain("the Role apps/image-refresh");
      expect(api).toContain("the attempt count is back at 0");
      // An image that shares no workload with it goes on.
      expect(line(r.stderr, "node-agent"), r.stderr).toContain("outcome=refreshed");
      const book = w.book();
      expect(book["refresh-attempt-api"], `tick ${tick}`).toBeUndefined();
      expect(book["refresh-flap-detected-api"]).toBeUndefined();
      expect(book["failed-api-digest"]).toBeUndefined();
      expect(book["last-attempt-api"]).toMatch(/^sha256:[0-9a-f]{64} refused \S+Z$/);
    }
  }, 60_000);

  test("a refused re-pin gives its repin streak back too: the next tick is refused again, never contested", async () => {
    await recorded(w);
    const R = w.book()["last-refreshed-api-digest"] as string;
    // Helm renders the floating tag over api's pin: a re-pin is due.
    w.api.setImage("Deployment", "apps", "api", "api", `${w.registry.host}/myorg/api:stable`, {
      manager: "helm",
    });
    await waitFor(w.api, "Deployment", "apps", "api", settled);
    w.api.setRbac({ user: USER, rules: WITHOUT_PATCH });
    for (let tick = 1; tick <= 2; tick++) {
      const r = await w.run();
      expect(r.code, r.stderr).toBe(1);
      expect(line(r.stderr, "api"), r.stderr).toContain("outcome=held reason=patch_refused");
      expect(line(r.stderr, "api")).toContain(`not an attempt of build ${R}`);
      expect(w.book()["repin-streak-api"], `tick ${tick}`).toBeUndefined();
      expect(w.book()["refresh-attempt-api"]).toBeUndefined();
    }
    expect(w.api.events.filter((e) => e.reason === "PinContested")).toEqual([]);
  });

  test("422 (the guard's failed test): held, the count given back to the count before the tick", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.setBook({ "refresh-attempt-api": "1" });
    const message = "the server rejected our request due to an error in our request: test operation failed";
    w.api.faults.add({
      method: "PATCH",
      path: STATE_PATH,
      fault: { type: "status", code: 422, reason: "Invalid", message },
    });
    const r = await w.run();
    expect(r.code, r.stderr).toBe(1);
    expect(line(r.stderr, "api")).toContain("outcome=held reason=patch_refused");
    expect(line(r.stderr, "api")).toContain("the attempt count is back at 1");
    expect(w.book()["refresh-attempt-api"]).toBe("1");
    expect(w.book()["failed-api-digest"]).toBeUndefined();
  });

  test("the give-back write fails too: the message says the count stayed", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.faults.add({
      method: "PATCH",
      path: STATE_PATH,
      fault: { type: "status", code: 404, reason: "NotFound" },
    });
    // The first store PATCH (the attempt) lands; every later one fails.
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "delay", ms: 0 } });
    w.api.faults.add({
      method: "PATCH",
      path: STORE_PATH,
      fault: { type: "status", code: 500, reason: "InternalError" },
    });
    const r = await w.run();
    expect(r.code, r.stderr).toBe(1);
    const api = line(r.stderr, "api");
    expect(api).toContain("outcome=held reason=patch_refused");
    expect(api).toContain("the workload is gone");
    expect(api).toContain("the attempt count stayed at 1");
    expect(w.book()["refresh-attempt-api"]).toBe("1");
  });
});

describe("an abandoned attempt names no failed build", () => {
  /** Count 2 from an older bad build, and a new build (healthy: the world's workloads settle). */
  async function twoFailedThenNew(): Promise<string> {
    await recorded(w);
    w.setBook({ "refresh-attempt-api": "2", "failed-api-digest": OLD_BAD });
    return w.registry.push("myorg/api", "stable");
  }

  async function expectAbandoned(healthy: string): Promise<void> {
    expect(w.book()["refresh-attempt-api"]).toBe("3");
    expect(w.book()["failed-api-digest"]).toBe(OLD_BAD);
    const r = await w.run();
    expect(r.code, r.stderr).toBe(1);
    const api = line(r.stderr, "api");
    expect(api, r.stderr).toContain("outcome=locked_out");
    expect(api).toContain(`the last, of build ${healthy}, was abandoned`);
    expect(api).not.toContain("failed rollouts");
    expect(api).not.toMatch(/reject api`? to wait/);
    const status = await w.run(["status", "api"]);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`abandoned`);
    expect(status.stdout).not.toContain(`failed build ${healthy}`);
    const reject = await w.run(["reject", "api"]);
    expect(reject.code, reject.stderr).toBe(2);
    expect(reject.stderr).toContain("image-refresh reject api DIGEST");
    expect(w.book()["rejected-api-digest"]).toBeUndefined();
  }

  test("the tick is killed right after persisting count 3 for a new, healthy build", async () => {
    const healthy = await twoFailedThenNew();
    // The first workload patch never answers; the tick is killed while it waits.
    w.api.faults.add({ method: "PATCH", path: STATE_PATH, times: 1, fault: { type: "hang" } });
    const t = start(w);
    await until("the attempt write", () => w.book()["refresh-attempt-api"] === "3");
    t.proc.kill("SIGKILL");
    await t.done;
    expect(w.book()["last-attempt-api"]).toStartWith(`${healthy} started `);
    await expectAbandoned(healthy);
  }, 30_000);

  test("the attempt write lands but its answer is lost", async () => {
    const healthy = await twoFailedThenNew();
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "lost" } });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(line(r.stderr, "api")).toContain("reason=attempt_not_persisted");
    await expectAbandoned(healthy);
  }, 30_000);
});
