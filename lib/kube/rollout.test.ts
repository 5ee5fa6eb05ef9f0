// The rollout wait against a scripted client: each list() and watch() call takes the next entry.
import { describe, expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { memoryLogger } from "../log.ts";
import { ApiError } from "./errors.ts";
import type { Workload } from "./objects.ts";
import { type RolloutResult, waitForRollout } from "./rollout.ts";
import type { KubeClient, ObjectRef } from "./workloads.ts";

const ref: ObjectRef = { kind: "Deployment", namespace: "apps", name: "api" };

function dep(rv: string, gen: number, status: Workload["status"]): Workload {
  return {
    kind: "Deployment",
    metadata: { name: "api", namespace: "apps", generation: gen, resourceVersion: rv, annotations: {} },
    spec: { replicas: 2, template: { spec: { containers: [{ name: "api", image: "x" }] } } },
    status,
  };
}

const unobserved = (rv: string) =>
  dep(rv, 5, { observedGeneration: 4, replicas: 2, updatedReplicas: 2, availableReplicas: 2 });
const rolling = (rv: string) =>
  dep(rv, 5, { observedGeneration: 5, replicas: 3, updatedReplicas: 1, availableReplicas: 2 });
const done = (rv: string) =>
  dep(rv, 5, { observedGeneration: 5, replicas: 2, updatedReplicas: 2, availableReplicas: 2 });
const deadline = (rv: string) =>
  dep(rv, 5, {
    observedGeneration: 5,
    conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded" }],
  });
/** A stale object: settled, but for the previous generation (the one before our patch). */
const settledBefore = (rv: string) =>
  dep(rv, 4, { observedGeneration: 4, replicas: 2, updatedReplicas: 2, availableReplicas: 2 });

type ListStep = Workload[] | ApiError;
type WatchStep = Array<{ type: string; object: unknown }> | ApiError | "hang";
/** A GET that never answers ("hang") only ends when the tick's signal does. */
type GetStep = Workload | ApiError | "hang";

function scripted(lists: ListStep[], watches: WatchStep[], gets: GetStep[] = []) {
  const calls: string[] = [];
  const client = {
    get() {
      calls.push("get");
      const step = gets.shift();
      if (step === undefined) return Promise.reject(new Error("no GET was scripted"));
      if (step === "hang") return new Promise(() => {});
      return step instanceof ApiError ? Promise.reject(step) : Promise.resolve(step);
    },
    async list() {
      const step = lists.shift() ?? [];
      calls.push("list");
      if (step instanceof ApiError) throw step;
      return { resourceVersion: step[0]?.metadata.resourceVersion ?? "1", items: step };
    },
    async *watch(_r: ObjectRef, o: { resourceVersion: string; signal: AbortSignal }) {
      calls.push(`watch@${o.resourceVersion}`);
      const step = watches.shift() ?? "hang";
      if (step instanceof ApiError) throw step;
      if (step === "hang") {
        await new Promise((_, reject) => o.signal.addEventListener("abort", () => reject(o.signal.reason)));
        return;
      }
      yield* step;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

const apiError = (code: number, reason: string) =>
  new ApiError({ method: "GET", url: "/x", target: "Deployment apps/api", code, reason, statusMessage: "m" });
const ev = (type: string, object: unknown) => ({ type, object });

type Case = [name: string, lists: ListStep[], watches: WatchStep[], want: RolloutResult, calls: string[]];

const cases: Case[] = [
  [
    "done on the initial list",
    [[done("10")]],
    [],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list"],
  ],
  [
    "a settled object of the previous generation does not count",
    [[settledBefore("10")]],
    [[ev("MODIFIED", unobserved("11")), ev("MODIFIED", rolling("12")), ev("MODIFIED", done("13"))]],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list", "watch@10"],
  ],
  [
    "clean EOF reconnects from the last version seen, bookmarks included",
    [[rolling("10")]],
    [
      [ev("MODIFIED", rolling("11"))],
      [ev("BOOKMARK", { metadata: { resourceVersion: "15" } })],
      [ev("MODIFIED", done("16"))],
    ],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list", "watch@10", "watch@11", "watch@15"],
  ],
  [
    "an in-stream 410 ERROR re-lists",
    [[rolling("10")], [done("20")]],
    [[ev("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" })]],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list", "watch@10", "list"],
  ],
  [
    "an HTTP 410 on the watch re-lists",
    [[rolling("10")], [done("20")]],
    [apiError(410, "Expired")],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list", "watch@10", "list"],
  ],
  [
    "a transient list failure re-lists",
    [apiError(503, "ServiceUnavailable"), [done("20")]],
    [],
    { ok: true, message: 'deployment "api" successfully rolled out' },
    ["list", "list"],
  ],
  [
    "progress deadline fails fast",
    [[rolling("10")]],
    [[ev("MODIFIED", deadline("11"))]],
    { ok: false, reason: "deadline_exceeded", message: 'deployment "api" exceeded its progress deadline' },
    ["list", "watch@10"],
  ],
  [
    "DELETED fails",
    [[rolling("10")]],
    [[ev("DELETED", rolling("11"))]],
    { ok: false, reason: "deleted", message: "Deployment apps/api has been deleted" },
    ["list", "watch@10"],
  ],
  [
    "gone before the list",
    [[]],
    [],
    { ok: false, reason: "deleted", message: "Deployment apps/api has been deleted" },
    ["list"],
  ],
  [
    "a terminal list error fails",
    [apiError(403, "Forbidden")],
    [],
    { ok: false, reason: "error", message: "Cannot GET Deployment apps/api: Forbidden (403) m" },
    ["list"],
  ],
];

describe("waitForRollout", () => {
  for (const [name, lists, watches, want, calls] of cases) {
    test(name, async () => {
      const s = scripted(lists, watches);
      const telemetry = recordingTelemetry();
      const opts = {
        afterGeneration: 5,
        timeoutMs: 300,
        signal: new AbortController().signal,
        telemetry,
        log: memoryLogger(),
        retryDelayMs: 1,
        minWatchIntervalMs: 1,
      };
      expect(await waitForRollout(s.client, ref, opts)).toEqual(want);
      expect(s.calls).toEqual(calls);
      expect(telemetry.spans[0]).toMatchObject({
        name: "rollout.wait",
        kind: "internal",
        attributes: { "k8s.namespace.name": "apps", "k8s.deployment.name": "api" },
      });
    });
  }

  test("a crash loop that keeps sending events never outlives the deadline", async () => {
    const events = Array.from({ length: 10_000 }, (_, i) => ev("MODIFIED", rolling(String(100 + i))));
    const slow = {
      list: async () => ({ resourceVersion: "10", items: [rolling("10")] }),
      get: async () => rolling("20000"),
      async *watch(_r: ObjectRef, o: { signal: AbortSignal }) {
        for (const e of events) {
          await Bun.sleep(5);
          if (o.signal.aborted) throw o.signal.reason;
          yield e;
        }
      },
    } as unknown as KubeClient;
    const started = Date.now();
    const log = memoryLogger();
    const opts = {
      afterGeneration: 5,
      timeoutMs: 200,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log,
    };
    const result = await waitForRollout(slow, ref, opts);
    expect(result.ok ? "ok" : result.reason).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(600);
    // progress is logged when it changes, not once per event
    expect(log.lines.filter((l) => l.level === "info").length).toBe(1);
  });
});

/** Settled for our generation, but on another image than the patch set (a human's rollout undo). */
const doneOther = (rv: string) => {
  const w = done(rv);
  return { ...w, spec: { ...w.spec, template: { spec: { containers: [{ name: "api", image: "z" }] } } } };
};
const timedOut = (last: string) => `timed out after 300ms waiting for Deployment apps/api: ${last}`;
const rollingMessage =
  'Waiting for deployment "api" rollout to finish: 1 out of 2 new replicas have been updated...';

// The watch never answers (a proxy that buffers chunked responses), so the last observation is
// the LIST taken right after the patch; the verdict comes from the GET at the deadline.
type DeadlineCase = [name: string, get: GetStep, want: RolloutResult];
const atDeadline: DeadlineCase[] = [
  [
    "settled since the list → ok",
    done("20"),
    { ok: true, message: 'deployment "api" successfully rolled out' },
  ],
  [
    "still rolling → timeout with the re-read's message",
    rolling("20"),
    { ok: false, reason: "timeout", message: timedOut(rollingMessage) },
  ],
  [
    "settled for the previous generation only → timeout",
    settledBefore("20"),
    {
      ok: false,
      reason: "timeout",
      message: timedOut("Waiting for deployment spec update to be observed..."),
    },
  ],
  [
    "past its progress deadline → deadline_exceeded",
    deadline("20"),
    { ok: false, reason: "deadline_exceeded", message: 'deployment "api" exceeded its progress deadline' },
  ],
  [
    "settled on another image → changed",
    doneOther("20"),
    {
      ok: false,
      reason: "changed",
      message:
        "Deployment apps/api settled, but container api runs z, not x: the workload was changed by someone else during the rollout",
    },
  ],
  [
    "a re-read that fails (500) → timeout, saying so",
    apiError(500, "InternalError"),
    {
      ok: false,
      reason: "timeout",
      message: timedOut(
        "Waiting for deployment spec update to be observed...; re-reading it at the deadline failed: Cannot GET Deployment apps/api: InternalError (500) m",
      ),
    },
  ],
  [
    "a re-read that times out → timeout, saying so",
    apiError(0, "Timeout"),
    {
      ok: false,
      reason: "timeout",
      message: timedOut(
        "Waiting for deployment spec update to be observed...; re-reading it at the deadline failed: Cannot GET Deployment apps/api: Timeout m",
      ),
    },
  ],
];

function deadlineOpts(signal: AbortSignal) {
  return {
    afterGeneration: 5,
    expectImages: { api: "x" },
    timeoutMs: 300,
    signal,
    telemetry: recordingTelemetry(),
    log: memoryLogger(),
    retryDelayMs: 1,
    minWatchIntervalMs: 1,
  };
}

describe("waitForRollout at its deadline", () => {
  for (const [name, get, want] of atDeadline) {
    test(name, async () => {
      const s = scripted([[unobserved("10")]], ["hang"], [get]);
      const result = await waitForRollout(s.client, ref, deadlineOpts(new AbortController().signal));
      expect(result).toEqual(want);
      expect(s.calls).toEqual(["list", "watch@10", "get"]);
    });
  }

  test("the tick's signal (SIGTERM) ends the wait with no re-read", async () => {
    const s = scripted([[unobserved("10")]], ["hang"], [done("20")]);
    const tick = new AbortController();
    setTimeout(() => tick.abort(new Error("SIGTERM")), 50);
    const result = await waitForRollout(s.client, ref, deadlineOpts(tick.signal));
    expect(result).toEqual({
      ok: false,
      reason: "error",
      message: "wait for Deployment apps/api cancelled: Waiting for deployment spec update to be observed...",
    });
    expect(s.calls).toEqual(["list", "watch@10"]);
  });

  test("a SIGTERM that lands with the deadline still means no re-read", async () => {
    const tick = new AbortController();
    const s = scripted([[unobserved("10")]], [], [done("20")]);
    // The watch sees the deadline's abort and, before it rejects, the tick is stopped too.
    s.client.watch = async function* (_r: ObjectRef, o: { signal: AbortSignal }) {
      s.calls.push("watch");
      await new Promise((_, reject) =>
        o.signal.addEventListener("abort", () => {
          tick.abort(new Error("SIGTERM"));
          reject(o.signal.reason);
        }),
      );
    };
    const result = await waitForRollout(s.client, ref, deadlineOpts(tick.signal));
    expect(result.ok ? "ok" : result.reason).toBe("timeout");
    expect(s.calls).toEqual(["list", "watch"]);
  });

  test("the tick's signal cuts a hanging re-read short, keeping the timeout", async () => {
    const s = scripted([[unobserved("10")]], ["hang"], ["hang"]);
    const tick = new AbortController();
    setTimeout(() => tick.abort(new Error("SIGTERM")), 400); // 100 ms into the re-read
    const result = await waitForRollout(s.client, ref, deadlineOpts(tick.signal));
    expect(result).toEqual({
      ok: false,
      reason: "timeout",
      message: timedOut(
        "Waiting for deployment spec update to be observed...; re-reading it at the deadline failed: the tick was stopped",
      ),
    });
    expect(s.calls).toEqual(["list", "watch@10", "get"]);
  });
});

// The revert's PATCH response still carries the failed rollout's ProgressDeadlineExceeded, and the
// controller keeps it (the old ReplicaSet comes back, no condition is reset) until complete.
const exceeded = {
  type: "Progressing",
  status: "False",
  reason: "ProgressDeadlineExceeded",
  message: 'ReplicaSet "api-bad" has timed out progressing.',
  lastUpdateTime: "2026-12-01T22:50:41Z",
  lastTransitionTime: "2026-12-01T22:50:41Z",
};
const written = dep("9", 5, {
  observedGeneration: 4,
  replicas: 3,
  updatedReplicas: 1,
  conditions: [exceeded],
});
const leftOver = (rv: string) =>
  dep(rv, 5, {
    observedGeneration: 5,
    replicas: 3,
    updatedReplicas: 2,
    availableReplicas: 2,
    conditions: [exceeded],
  });
const exceededAgain = (rv: string) =>
  dep(rv, 5, {
    observedGeneration: 5,
    conditions: [
      { ...exceeded, lastUpdateTime: "2026-12-01T22:51:30Z", lastTransitionTime: "2026-12-01T22:51:30Z" },
    ],
  });
const pending = 'Waiting for deployment "api" rollout to finish: 1 old replicas are pending termination...';

describe("waitForRollout and a progress deadline left over from before the patch", () => {
  const opts = () => ({ ...deadlineOpts(new AbortController().signal), written });

  test("is no verdict: the wait goes on until the rollout completes", async () => {
    const s = scripted([[leftOver("10")]], [[ev("MODIFIED", leftOver("11")), ev("MODIFIED", done("12"))]]);
    const log = memoryLogger();
    const result = await waitForRollout(s.client, ref, { ...opts(), log });
    expect(result).toEqual({ ok: true, message: 'deployment "api" successfully rolled out' });
    expect(log.lines.map((l) => l.msg)).toEqual([pending, 'deployment "api" successfully rolled out']);
  });

  test("a deadline this rollout reaches itself still fails fast", async () => {
    const s = scripted([[leftOver("10")]], [[ev("MODIFIED", exceededAgain("11"))]]);
    expect(await waitForRollout(s.client, ref, opts())).toEqual({
      ok: false,
      reason: "deadline_exceeded",
      message: 'deployment "api" exceeded its progress deadline',
    });
  });

  test("still there at rolloutTimeout: a timeout, not the earlier rollout's deadline", async () => {
    const s = scripted([[unobserved("10")]], ["hang"], [leftOver("20")]);
    expect(await waitForRollout(s.client, ref, opts())).toEqual({
      ok: false,
      reason: "timeout",
      message: timedOut(pending),
    });
  });
});
