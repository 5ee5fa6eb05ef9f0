// The rollout wait against a scripted client: each list() and watch() call takes the next entry.
import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../log.ts";
import { ApiError } from "./errors.ts";
import type { Workload } from "./objects.ts";
import { recordingTelemetry } from "./recording-telemetry.ts";
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

function scripted(lists: ListStep[], watches: WatchStep[]) {
  const calls: string[] = [];
  const client = {
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
  new ApiError({ method: "GET", url: "/x", target: "deployment apps/api", code, reason, statusMessage: "m" });
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
    { ok: false, reason: "deleted", message: "deployment apps/api has been deleted" },
    ["list", "watch@10"],
  ],
  [
    "gone before the list",
    [[]],
    [],
    { ok: false, reason: "deleted", message: "deployment apps/api has been deleted" },
    ["list"],
  ],
  [
    "a terminal list error fails",
    [apiError(403, "Forbidden")],
    [],
    { ok: false, reason: "error", message: "Cannot GET deployment apps/api: Forbidden (403) m" },
    ["list"],
  ],
  [
    "a stuck rollout times out with kubectl's last message",
    [[rolling("10")]],
    ["hang"],
    {
      ok: false,
      reason: "timeout",
      message:
        'timed out after 300ms waiting for deployment apps/api: Waiting for deployment "api" rollout to finish: 1 out of 2 new replicas have been updated...',
    },
    ["list", "watch@10"],
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
