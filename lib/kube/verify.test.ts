// The verification window against a scripted pod API: each list() takes the next entry, each
// watch() sends its scripted events and then stays open until the window's signal ends it.
import { describe, expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { memoryLogger } from "../log.ts";
import type { Workload } from "./objects.ts";
import type { Pod, PodApi } from "./pods.ts";
import { verifyRollout } from "./verify.ts";
import type { KubeClient, ObjectRef } from "./workloads.ts";

const ref: ObjectRef = { kind: "Deployment", namespace: "apps", name: "api" };
const IMAGE = "r/api@sha256:b";

/** A pod of the new build as the API server sends it: Running, Ready or not, with its restarts. */
function raw(name: string, restartCount = 0, ready = true) {
  return {
    metadata: { name, uid: `uid-${name}`, labels: { app: "api" } },
    spec: { containers: [{ name: "api", image: IMAGE }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
      containerStatuses: [{ name: "api", image: IMAGE, ready, restartCount }],
    },
  };
}
const parsed = (r: ReturnType<typeof raw>): Pod => ({
  name: r.metadata.name,
  uid: r.metadata.uid,
  labels: r.metadata.labels,
  deleting: false,
  phase: "Running",
  ready: r.status.conditions[0]?.status === "True",
  images: { api: IMAGE },
  containers: [
    {
      name: "api",
      image: IMAGE,
      ready: true,
      restartCount: r.status.containerStatuses[0]?.restartCount ?? 0,
    },
  ],
});

const available: Workload = {
  kind: "Deployment",
  metadata: { name: "api", namespace: "apps", generation: 2, resourceVersion: "9", annotations: {} },
  spec: { replicas: 1, template: { spec: { containers: [{ name: "api", image: IMAGE }] } } },
  status: { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
};

/** A watch event, or a pause (ms) before the next one. */
type Ev = { type: string; object: unknown } | number;
function scripted(lists: Pod[][], watches: Ev[][]) {
  const calls: string[] = [];
  const pods: PodApi = {
    async list() {
      calls.push("list");
      return { resourceVersion: "1", items: lists.shift() ?? [] };
    },
    async *watch(_ns, o) {
      calls.push("watch");
      for (const e of watches.shift() ?? []) {
        if (typeof e === "number") await Bun.sleep(e);
        else yield e;
      }
      // Like fetch: open until the signal ends it, then an AbortError.
      if (!o.signal.aborted)
        await new Promise((resolve) => o.signal.addEventListener("abort", resolve, { once: true }));
      throw o.signal.reason;
    },
  };
  const client = { pods, get: async () => available } as unknown as KubeClient;
  return { client, calls };
}

const verify = (client: KubeClient, verifyForMs: number) =>
  verifyRollout(client, ref, {
    podSelector: "app=api",
    images: { api: IMAGE },
    verifyForMs,
    signal: new AbortController().signal,
    telemetry: recordingTelemetry(),
    log: memoryLogger(),
    minWatchIntervalMs: 0,
  });

describe("the verification window", () => {
  test("pods that live through it untouched: verified after one window", async () => {
    const { client, calls } = scripted([[parsed(raw("api-a"))]], []);
    const r = await verify(client, 200);
    expect([r.ok, r.message]).toEqual([true, expect.stringContaining("verified for 200ms")]);
    expect(calls).toEqual(["list", "watch"]);
  });

  test("a pod deleted during the window: its replacement is watched for a whole window too, and its crash there fails the build", async () => {
    // Half-way through the first window api-a is deleted and api-b takes its place. Once that
    // window ends, api-b has been watched for about half of verifyFor (the margin is half a
    // window, so a late timer does not make it whole); in the rest of its own window it restarts.
    const { client, calls } = scripted(
      [[parsed(raw("api-a"))], [parsed(raw("api-b", 1))]],
      [[300, { type: "DELETED", object: raw("api-a") }, { type: "ADDED", object: raw("api-b") }]],
    );
    const r = await verify(client, 600);
    expect([r.ok, r.ok ? "" : r.reason, r.message]).toEqual([
      false,
      "unverified",
      expect.stringContaining("pod apps/api-b: container api restarted (restart count 0 -> 1)"),
    ]);
    expect(calls).toEqual(["list", "watch", "list"]);
    // Not "within 600ms": the window it failed in was the extended one.
    expect(r.message).toContain(
      "into its window (verifyFor 600ms, extended for a pod that joined during it)",
    );
  });
});
