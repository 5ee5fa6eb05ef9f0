// Bad builds that become Ready first, on the real control plane (kube-apiserver, etcd, the real
// deployment controller; the fake kubelet makes the pods of a digest Ready and then crash): a build
// that crashes within verifyFor is failed and reverted by the tick that rolled it out, counted each
// time, and held at maxRefreshAttempts; a build that crashes after its verification is reverted by
// the next tick as a regression, and a fix pushed meanwhile rolls out on the tick after; a running
// build a human rejects is rolled back by the next tick.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { REPORTING_CONTROLLER } from "../../lib/kube/events.ts";
import { readBook } from "./book.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Story, startStory, storyConfig } from "./story.ts";
import { messages } from "./tick.ts";

const missing = needPeers(["kube"], "tests/real/verify.real.test.ts");
const NS = "verify";
const STORE = "image-refresh-state";

describe.skipIf(missing)("builds that become Ready and then crash", () => {
  let s: Story;
  const events = async (reason: string): Promise<string[]> =>
    (await s.c.cp.admin.get(`/apis/events.k8s.io/v1/namespaces/${NS}/events`)).items
      .filter(
        (e: { reportingController: string; reason: string }) =>
          e.reportingController === REPORTING_CONTROLLER,
      )
      .filter((e: { reason: string }) => e.reason === reason)
      .map((e: { note: string }) => e.note);
  const settled = async (name: string): Promise<boolean> => {
    const d = (await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/${name}`)).status;
    return (d.availableReplicas ?? 0) >= (d.replicas ?? 0) && (d.updatedReplicas ?? 0) >= (d.replicas ?? 0);
  };

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      for (const r of ["soon", "late", "rej"]) x.reg.push(`${NS}/${r}`, "stable");
      return ["soon", "late", "rej"].map((r) => deployment(NS, r, { image: x.tag(r) }));
    });
    for (const w of ["soon", "late", "rej"]) await s.rolledOut(w);
    s.config(storyConfig(s, STORE, ["soon", "late", "rej"]));
    expect((await s.tick()).outcome).toBe("recorded");
    const adopt = await s.tick();
    expect([adopt.code, adopt.outcome]).toEqual([0, "refreshed"]);
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("crashing 1.5 s after Ready: reverted by the tick that rolled it out, each time, counted to the lockout", async () => {
    s.config(storyConfig(s, STORE, ["soon"], { verifyFor: "8s" }));
    const before = await s.image("soon");
    const bad = s.reg.push(`${NS}/soon`, "stable");
    s.c.kubelet.build(bad, { crashAfterMs: 1500 });
    for (const n of [1, 2, 3]) {
      const r = await s.tick();
      // The third failure reaches maxRefreshAttempts: the lockout is announced on that tick.
      expect([r.code, r.outcome]).toEqual([1, n < 3 ? "failed" : "locked_out"]);
      if (n < 3) expect(r.reason).toBe("rollout_failed_reverted");
      const failed = messages(r, "error").join("\n");
      expect(failed).toContain(`rollout of Deployment ${NS}/soon failed its verification (unverified)`);
      expect(failed).toMatch(
        /pod verify\/soon-\w+-\w+: container soon (waits in CrashLoopBackOff|restarted|is running but not Ready)|is running but not Ready/,
      );
      expect(await s.image("soon")).toBe(before);
      const book = await readBook(s, STORE);
      expect([book["refresh-attempt-soon"], book["failed-soon-digest"]]).toEqual([String(n), bad]);
      expect(book["last-refreshed-soon-digest"]).not.toBe(bad);
    }
    expect((await events("RolloutFailed")).some((note) => note.includes("pod verify/soon-"))).toBe(true);
    expect((await readBook(s, STORE))["refresh-flap-detected-soon"]).toBe("3");
    const held = await s.tick();
    expect([held.code, held.outcome]).toEqual([1, "locked_out"]);
    expect(await s.image("soon")).toBe(before);
  }, 300_000);

  test("crashing after its verification: reverted by the next tick as a regression; the fix rolls out on the tick after", async () => {
    s.config(storyConfig(s, STORE, ["late"], { verifyFor: "2s" }));
    const before = await s.image("late");
    const previous = (await readBook(s, STORE))["last-refreshed-late-digest"];
    const bad = s.reg.push(`${NS}/late`, "stable");
    s.c.kubelet.build(bad, { crashAfterMs: 10_000 });
    const rolled = await s.tick();
    expect([rolled.code, rolled.outcome]).toEqual([0, "refreshed"]);
    expect(await s.image("late")).toBe(s.pin("late", bad));
    const book = await readBook(s, STORE);
    expect([book["last-refreshed-late-digest"], book["previous-late-digest"]]).toEqual([bad, previous]);
    expect(book["verified-late-at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // The crash: the workload no longer settles.
    for (let i = 0; i < 120 && (await settled("late")); i++) await Bun.sleep(500);
    expect(await settled("late")).toBe(false);
    const fix = s.reg.push(`${NS}/late`, "stable");
    const r = await s.tick();
    expect([r.code, r.outcome, r.reason]).toEqual([1, "failed", "regressed"]);
    expect(await s.image("late")).toBe(before);
    const after = await readBook(s, STORE);
    expect([
      after["refresh-attempt-late"],
      after["failed-late-digest"],
      after["last-refreshed-late-digest"],
    ]).toEqual(["1", bad, previous]);
    expect((await events("BuildRegressed")).some((note) => note.includes(`pod ${NS}/late-`))).toBe(true);
    const next = await s.tick();
    expect([next.code, next.outcome]).toEqual([0, "refreshed"]);
    expect(await s.image("late")).toBe(s.pin("late", fix));
  }, 300_000);

  test("reject of the running build: reject names the workload, the next tick rolls it back uncounted", async () => {
    s.config(storyConfig(s, STORE, ["rej"]));
    const before = await s.image("rej");
    const previous = (await readBook(s, STORE))["last-refreshed-rej-digest"];
    const bad = s.reg.push(`${NS}/rej`, "stable");
    const rolled = await s.tick();
    expect([rolled.code, rolled.outcome]).toEqual([0, "refreshed"]);
    const r = await s.tick(["reject", "rej"]);
    expect(r.code).toBe(0);
    expect(messages(r, "info").join("\n")).toContain(
      `${bad} is running on Deployment ${NS}/rej: the next tick rolls it back to ${previous}`,
    );
    const back = await s.tick();
    expect([back.code, back.outcome, back.reason]).toEqual([0, "paused", "build_rejected"]);
    expect(await s.image("rej")).toBe(before);
    const book = await readBook(s, STORE);
    expect([
      book["last-refreshed-rej-digest"],
      book["rejected-rej-digest"],
      book["refresh-attempt-rej"],
    ]).toEqual([previous, bad, undefined]);
  }, 300_000);
});
