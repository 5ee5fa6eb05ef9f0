// The operator surface of the compiled binary: status, rearm and demo.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { runBinary } from "./binary.ts";
import { PREFIX, STATE_PATH, startWorld, type World, writes } from "./world.ts";

const k = (name: string) => `${PREFIX}/${name}`;
const CLEARED = [k("refresh-attempt"), k("refresh-flap-detected"), k("refresh-attempt-traceparent")];

let w: World;
beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // first observation: digests recorded
});
afterAll(async () => {
  await w.stop();
});
beforeEach(() => {
  w.api.faults.clear();
  w.api.setMode("Deployment", "apps", "api", "healthy");
  w.api.setAnnotations(
    "Deployment",
    "apps",
    "api",
    Object.fromEntries([...CLEARED, k("refresh-skip-streak")].map((x) => [x, null])),
  );
  w.api.clearLog();
});

describe("status", () => {
  const cases: Array<[string, Record<string, string>, string]> = [
    ["healthy", {}, "healthy"],
    ["refreshing", { [k("refresh-attempt")]: "1" }, "refreshing"],
    ["locked out", { [k("refresh-attempt")]: "3", [k("refresh-flap-detected")]: "3" }, "locked out"],
    ["frozen", { [k("refresh-skip-streak")]: "3" }, "frozen"],
    ["untrusted counter", { [k("refresh-attempt")]: "x" }, "attention"],
  ];
  for (const [name, annotations, verdict] of cases) {
    test(`${name} → verdict "${verdict}", read-only`, async () => {
      w.api.setAnnotations("Deployment", "apps", "api", annotations);
      const r = await w.run(["status", "--json"]);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout);
      expect(report.verdict).toBe(verdict);
      expect(writes(w.api)).toEqual([]);
    });
  }

  test("text output shows each target's live image against the recorded digest", async () => {
    const r = await w.run(["status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("verdict: healthy");
    expect(r.stdout).toContain(
      "Deployment apps/api-proxy container proxy: myorg/api:stable (not pinned to a digest)",
    );
    expect(r.stdout).toMatch(/image api \(myorg\/api\): recorded sha256:[0-9a-f]{64}/);
  });

  // SPEC: lockout is decided by the count alone; raising maxRefreshAttempts above it lifts it.
  test("a flap marker left below a raised maximum is called stale, not LOCKED OUT", async () => {
    w.api.setAnnotations("Deployment", "apps", "api", {
      [k("refresh-attempt")]: "1",
      [k("refresh-flap-detected")]: "1",
    });
    const r = await w.run(["status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("verdict: refreshing");
    expect(r.stdout).toContain("refresh attempts: 1/3 — the flap marker (1) is stale");
    expect(r.stdout).not.toContain("LOCKED OUT");
  });

  test("a lockout says so, with the way out", async () => {
    w.api.setAnnotations("Deployment", "apps", "api", {
      [k("refresh-attempt")]: "3",
      [k("refresh-flap-detected")]: "3",
    });
    const r = await w.run(["status"]);
    expect(r.stdout).toContain(
      "refresh attempts: 3/3 — LOCKED OUT (flap detected at 3); run image-refresh rearm after checking the workloads",
    );
  });

  test("an unreadable state object exits 1", async () => {
    w.api.faults.add({
      method: "GET",
      path: STATE_PATH,
      fault: { type: "status", code: 403, reason: "Forbidden" },
    });
    const r = await w.run(["status"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Forbidden (403)");
    expect(r.stdout).toBe("");
  });
});

describe("rearm", () => {
  test("removes counter, marker and traceparent in one guarded PATCH, even when unsettled", async () => {
    w.api.setAnnotations("Deployment", "apps", "api", {
      [k("refresh-attempt")]: "3",
      [k("refresh-flap-detected")]: "3",
      [k("refresh-attempt-traceparent")]: `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
    });
    w.api.setMode("Deployment", "apps", "api", "unsettled");
    w.api.clearLog();
    const r = await w.run(["rearm"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("re-armed Deployment apps/api");
    expect(writes(w.api)).toEqual([`PATCH ${STATE_PATH}`]);
    const body = JSON.parse(w.api.log.find((e) => e.method === "PATCH")?.body ?? "{}");
    expect(body.metadata.resourceVersion).toBeString();
    expect(Object.keys(body.metadata.annotations).sort()).toEqual([...CLEARED].sort());
    for (const key of CLEARED) expect(w.ours()[key]).toBeUndefined();
    expect(w.ours()[k("last-refreshed-api-digest")]).toBeString();
  });

  test("nothing to clear: says so, writes nothing, exits 0", async () => {
    const r = await w.run(["rearm"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("nothing to clear");
    expect(writes(w.api)).toEqual([]);
  });

  test("--dry-run says what it would clear and writes nothing", async () => {
    w.api.setAnnotations("Deployment", "apps", "api", { [k("refresh-attempt")]: "3" });
    const r = await w.run(["rearm", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("dry run: would remove");
    expect(writes(w.api)).toEqual([]);
    expect(w.ours()[k("refresh-attempt")]).toBe("3");
  });

  test("a conflict is re-read and retried", async () => {
    w.api.setAnnotations("Deployment", "apps", "api", { [k("refresh-attempt")]: "3" });
    w.api.faults.add({
      method: "PATCH",
      path: STATE_PATH,
      times: 1,
      fault: { type: "status", code: 409, reason: "Conflict" },
    });
    const r = await w.run(["rearm"]);
    expect(r.code).toBe(0);
    expect(w.ours()[k("refresh-attempt")]).toBeUndefined();
  });
});

test("demo plays the whole story offline and exits 0", async () => {
  const r = await runBinary(["demo"], { timeoutMs: 60_000 });
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("demo finished: every tick did what it should");
  for (const outcome of ["recorded", "noop", "refreshed", "failed", "locked_out"])
    expect(r.stdout).toContain(`outcome: ${outcome}`);
  expect(r.stdout).toContain("re-armed Deployment apps/api");
});
