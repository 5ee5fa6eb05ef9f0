// The operator surface of the compiled binary: status, rearm, reject and demo, per image.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { runBinary } from "../support/binary.ts";
import { documentedExitCode } from "../support/documented-outcomes.ts";
import { PREFIX, STATE, STORE_PATH, startWorld, type World, writes } from "../support/world.ts";

const k = (name: string) => `${PREFIX}/${name}`;
const PER_IMAGE = ["refresh-attempt", "refresh-flap-detected", "refresh-attempt-traceparent", "repin-streak"];
const LEGACY_STATE = { kind: STATE[0], namespace: STATE[1], name: STATE[2] };
const cleared = (key: string) => PER_IMAGE.map((n) => k(`${n}-${key}`));
const LEGACY = [k("refresh-attempt"), k("refresh-flap-detected"), k("refresh-attempt-traceparent")];
const TRACE = `00-${"a".repeat(32)}-${"b".repeat(16)}-01`;

let w: World;
beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // first observation: digests recorded
});
afterAll(async () => {
  await w.stop();
});
beforeEach(async () => {
  w.api.faults.clear();
  w.registry.faults.clear();
  w.api.setMode("Deployment", "apps", "api", "healthy");
  const ours = Object.keys(w.ours()).filter((x) => !x.includes("last-refreshed-"));
  w.setBook(Object.fromEntries(ours.map((x) => [x, null])));
  // A build pushed by an earlier test is rolled out first, so each test starts in sync.
  expect((await w.run()).code).toBe(0);
  w.api.clearLog();
});

type Report = { images: Array<{ key: string; verdict: { outcome: string; reason: string }; next: string }> };
const verdicts = (r: Report) =>
  Object.fromEntries(r.images.map((i) => [i.key, `${i.verdict.outcome}/${i.verdict.reason}`]));

describe("status", () => {
  const cases: Array<[string, () => void, Record<string, string>]> = [
    ["healthy", () => {}, { api: "noop/unchanged", "node-agent": "noop/unchanged" }],
    [
      "a new api build",
      () => w.registry.push("myorg/api", "stable"),
      { api: "refreshed/digest_changed", "node-agent": "noop/unchanged" },
    ],
    [
      "a new api build while api is locked out",
      () => {
        w.registry.push("myorg/api", "stable");
        w.setBook({
          [k("refresh-attempt-api")]: "3",
          [k("refresh-flap-detected-api")]: "3",
        });
      },
      { api: "locked_out/flap_lockout", "node-agent": "noop/unchanged" },
    ],
    [
      "an untrusted count and a new build",
      () => {
        w.registry.push("myorg/api", "stable");
        w.setBook({ [k("refresh-attempt-api")]: "x" });
      },
      { api: "held/attempt_untrusted", "node-agent": "noop/unchanged" },
    ],
    [
      "a repository the registry does not know",
      () => w.registry.faults.add({ path: /node-agent\/manifests/, fault: { type: "status", code: 404 } }),
      { api: "noop/unchanged", "node-agent": "unresolved/unresolved" },
    ],
    [
      "an unsettled target of api (node-agent's DaemonSet is not concerned)",
      () => w.api.setMode("Deployment", "apps", "api", "unsettled"),
      { api: "skipped/not_settled", "node-agent": "noop/unchanged" },
    ],
  ];
  for (const [name, arrange, want] of cases) {
    test(`${name}: the verdict the next tick would reach, per image, read-only`, async () => {
      arrange();
      w.api.clearLog();
      const r = await w.run(["status", "--json"]);
      // Usable as a check: 1 when the next tick's verdict for a printed image exits 1.
      const outcomes = Object.values(want).map((v) => v.split("/")[0] as string);
      expect(r.code).toBe(outcomes.some((o) => documentedExitCode(o) === 1) ? 1 : 0);
      expect(verdicts(JSON.parse(r.stdout))).toEqual(want);
      expect(writes(w.api)).toEqual([]);
    });
  }

  test("the exit code counts the printed images only: api held exits 1, status node-agent 0", async () => {
    w.registry.push("myorg/api", "stable");
    w.setBook({ [k("refresh-attempt-api")]: "x" });
    const all = await w.run(["status"]);
    expect(all.stdout).toContain("image api (myorg/api): HELD (attempt_untrusted)");
    expect(all.code).toBe(1);
    expect((await w.run(["status", "api"])).code).toBe(1);
    const other = await w.run(["status", "node-agent"]);
    expect(other.stdout).toContain("image node-agent (myorg/node-agent): NOOP (unchanged)");
    expect(other.code).toBe(0);
  });

  test("status IMAGE shows that image only; an unknown IMAGE is a usage error naming the keys", async () => {
    const one = await w.run(["status", "--json", "node-agent"]);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout).images.map((i: { key: string }) => i.key)).toEqual(["node-agent"]);
    const bad = await w.run(["status", "nope"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown image nope: the config's image keys are api, node-agent");
  });

  test("text output: per image the recorded and registry digests, each target's live image, the next step", async () => {
    const r = await w.run(["status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("image api (myorg/api): NOOP (unchanged)");
    expect(r.stdout).toMatch(/ {2}recorded: sha256:[0-9a-f]{64}\n {2}registry: sha256:[0-9a-f]{64}/);
    expect(r.stdout).toMatch(
      / {2}Deployment apps\/api-proxy container proxy: \S+\/myorg\/api@sha256:[0-9a-f]{64} \(in sync: pinned to the recorded digest; image last changed by \S+ at \S+\)\n/,
    );
    expect(r.stdout).toContain("  next: nothing to do");
  });

  // Lockout is decided by the count alone; raising maxRefreshAttempts above it lifts it.
  test("a flap marker left below a raised maximum is called stale, not LOCKED OUT", async () => {
    w.setBook({
      [k("refresh-attempt-api")]: "1",
      [k("refresh-flap-detected-api")]: "1",
    });
    const r = await w.run(["status", "api"]);
    expect(r.stdout).toContain("refresh attempts: 1/3 — the flap marker (1) is stale");
    expect(r.stdout).not.toContain("LOCKED OUT");
  });

  test("an unreadable store exits 1", async () => {
    w.api.faults.add({
      method: "GET",
      path: STORE_PATH,
      fault: { type: "status", code: 403, reason: "Forbidden" },
    });
    const r = await w.run(["status"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Forbidden (403)");
    expect(r.stdout).toBe("");
  });
});

describe("rearm", () => {
  const locked = () =>
    w.setBook({
      [k("refresh-attempt-api")]: "3",
      [k("refresh-flap-detected-api")]: "3",
      [k("refresh-attempt-traceparent-api")]: TRACE,
      [k("refresh-attempt-node-agent")]: "3",
      [k("refresh-flap-detected-node-agent")]: "3",
    });

  test("rearm api clears only api, in one guarded PATCH of the store, even when unsettled, and says what it removed", async () => {
    locked();
    w.api.setMode("Deployment", "apps", "api", "unsettled");
    w.api.clearLog();
    const r = await w.run(["rearm", "api"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "re-armed: api: removed refresh-attempt-api (was 3), refresh-flap-detected-api (was 3)",
    );
    expect(writes(w.api)).toEqual([`PATCH ${STORE_PATH}`]);
    const body = JSON.parse(w.api.log.find((e) => e.method === "PATCH")?.body ?? "{}");
    expect(body.metadata.resourceVersion).toBeString();
    expect(body.data).toEqual({
      "refresh-attempt-api": null,
      "refresh-flap-detected-api": null,
      "refresh-attempt-traceparent-api": null,
    });
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("3");
    expect(w.ours()[k("refresh-flap-detected-node-agent")]).toBe("3");
  });

  test("rearm with no IMAGE clears every image's counters, failed digest, repin streak and rejection", async () => {
    locked();
    w.setBook({
      "failed-api-digest": `sha256:${"9".repeat(64)}`,
      "rejected-node-agent-digest": `sha256:${"8".repeat(64)}`,
    });
    const r = await w.run(["rearm"]);
    expect(r.code).toBe(0);
    for (const key of [...cleared("api"), ...cleared("node-agent")]) expect(w.ours()[key]).toBeUndefined();
    expect(w.book()["failed-api-digest"]).toBeUndefined();
    expect(w.book()["rejected-node-agent-digest"]).toBeUndefined();
    expect(r.stderr).toContain("rejected-node-agent-digest (was");
    expect(w.ours()[k("last-refreshed-api-digest")]).toBeString();
  });

  test("nothing to clear: says so, writes nothing, exits 0", async () => {
    const r = await w.run(["rearm"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("nothing to clear");
    expect(writes(w.api)).toEqual([]);
  });

  test("--dry-run says what it would clear and writes nothing", async () => {
    locked();
    const r = await w.run(["rearm", "--dry-run", "node-agent"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "dry run: would re-arm in ConfigMap image-refresh/image-refresh-state: node-agent: removed refresh-attempt-node-agent (was 3)",
    );
    expect(writes(w.api)).toEqual([]);
    expect(w.ours()[k("refresh-attempt-node-agent")]).toBe("3");
  });

  test("a conflict is re-read and retried", async () => {
    locked();
    w.api.faults.add({
      method: "PATCH",
      path: STORE_PATH,
      times: 1,
      fault: { type: "status", code: 409, reason: "Conflict" },
    });
    const r = await w.run(["rearm", "api"]);
    expect(r.code).toBe(0);
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
  });

  test("an unknown IMAGE is a usage error (exit 2) naming the known keys, before any request", async () => {
    const r = await w.run(["rearm", "api", "nope"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown image nope: the config's image keys are api, node-agent");
    expect(w.api.log).toEqual([]);
  });
});

describe("reject", () => {
  test("stores the tag's current digest as rejected and re-arms the image in one PATCH; a Warning Event", async () => {
    const bad = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.setBook({
      [k("refresh-attempt-node-agent")]: "3",
      [k("refresh-flap-detected-node-agent")]: "3",
    });
    w.api.clearLog();
    const r = await w.run(["reject", "node-agent"]);
    expect(r.code).toBe(0);
    // One PATCH that lands (a conflict with the controller's status write is re-read and retried).
    const landed = w.api.log
      .filter((e) => e.method !== "GET" && e.status < 300)
      .map((e) => `${e.method} ${e.path}`);
    // About the image's target: the DaemonSet, in its own namespace.
    expect(landed).toEqual([`PATCH ${STORE_PATH}`, "POST /apis/events.k8s.io/v1/namespaces/agents/events"]);
    const a = w.ours();
    expect(a[k("rejected-node-agent-digest")]).toBe(bad);
    expect(a[k("refresh-attempt-node-agent")]).toBeUndefined();
    expect(a[k("refresh-flap-detected-node-agent")]).toBeUndefined();
    expect(w.api.events.at(-1)).toMatchObject({ type: "Warning", reason: "BuildRejected" });
  });

  test("--dry-run writes nothing; reject needs exactly one known IMAGE", async () => {
    w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.clearLog();
    const dry = await w.run(["reject", "--dry-run", "node-agent"]);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toContain("dry run: would reject");
    expect(writes(w.api)).toEqual([]);
    expect((await w.run(["reject"])).code).toBe(2);
    expect((await w.run(["reject", "api", "node-agent"])).code).toBe(2);
    expect((await w.run(["reject", "api", "sha256:abc"])).code).toBe(2);
    expect((await w.run(["reject", "nope"])).code).toBe(2);
  });

  test("a registry that cannot say which build is current: exit 1, nothing written", async () => {
    w.registry.faults.add({ path: /node-agent\/manifests/, fault: { type: "status", code: 500 } });
    const r = await w.run(["reject", "node-agent"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot reject the current build of myorg/node-agent:stable");
    expect(writes(w.api)).toEqual([]);
  });
});

test("demo plays the per-image story offline and exits 0", async () => {
  const r = await runBinary(["demo"], { timeoutMs: 60_000 });
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("demo finished: every tick did what it should");
  for (const outcome of [
    "recorded",
    "noop",
    "refreshed",
    "failed",
    "locked_out",
    "paused",
    "unresolved",
    "stale",
  ])
    expect(r.stdout).toContain(`outcome: ${outcome}`);
  expect(r.stdout).toContain(
    "outcome: locked_out (flap_lockout): api: refreshed; node-agent: locked_out 3/3",
  );
  expect(r.stdout).toMatch(/myorg\/node-agent@sha256:[0-9a-f]{64} rejected by a human/);
}, 60_000);
