// waitForRollout against the simulated controllers over real HTTPS, for every kind and mode:
// a healthy rollout settles, a Deployment past its progress deadline fails fast, and flapping or
// crash-looping rollouts end at the timeout, never later.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RolloutResult, waitForRollout } from "../../lib/kube/rollout.ts";
import {
  createKubeClient,
  type KubeClient,
  type ObjectRef,
  type WorkloadKind,
} from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { type ControllerMode, type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { recordingTelemetry } from "../support/recording-telemetry.ts";

let sim: SimApiServer;
let kube: KubeClient;
let seq = 0;

beforeAll(async () => {
  sim = await startApiServer({ stepMs: 10, bookmarkMs: 50 });
  kube = createKubeClient(
    { server: sim.url, caPem: sim.caPem, insecureSkipTlsVerify: false, token: sim.token },
    {
      requestTimeoutMs: 1000,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
    },
  );
});
afterAll(() => sim.stop());

/** A fresh, settled workload, then a patch of its image: the rollout to wait for. */
async function patched(
  kind: WorkloadKind,
  mode: ControllerMode,
  slowMs?: number,
): Promise<{ ref: ObjectRef; generation: number }> {
  const ref: ObjectRef = { kind, namespace: "apps", name: `w${++seq}` };
  sim.addWorkload({ ...ref, containers: [{ name: "app", image: "myorg/app:1" }], replicas: 2 });
  await Bun.sleep(30); // settled before the mode applies to the next rollout
  sim.setMode(kind, ref.namespace, ref.name, mode, { slowMs });
  const w = await kube.strategicPatch(ref, {
    spec: { template: { spec: { containers: [{ name: "app", image: "myorg/app:2" }] } } },
  });
  return { ref, generation: w.metadata.generation };
}

async function wait(
  ref: ObjectRef,
  generation: number,
  timeoutMs: number,
  signal = new AbortController().signal,
) {
  const telemetry = recordingTelemetry();
  const log = memoryLogger();
  const started = Date.now();
  const result = await waitForRollout(kube, ref, {
    afterGeneration: generation,
    expectImages: { app: "myorg/app:2" },
    timeoutMs,
    signal,
    telemetry,
    log,
    retryDelayMs: 20,
  });
  return { result, ms: Date.now() - started, telemetry, log };
}

const outcome = (r: RolloutResult) => (r.ok ? "ok" : r.reason);

const DONE: Record<WorkloadKind, RegExp> = {
  Deployment: /^deployment "w\d+" successfully rolled out$/,
  DaemonSet: /^daemon set "w\d+" successfully rolled out$/,
  StatefulSet: /^(partitioned roll out complete|statefulset rolling update complete)/,
};

for (const kind of ["Deployment", "DaemonSet", "StatefulSet"] as const) {
  describe(`waitForRollout ${kind}`, () => {
    test("healthy settles, logging kubectl's progress once per change, in a rollout.wait span", async () => {
      const { ref, generation } = await patched(kind, "healthy");
      const { result, telemetry, log } = await wait(ref, generation, 5000);
      expect(result.ok).toBe(true);
      expect(result.message).toMatch(DONE[kind]);
      const messages = log.lines.filter((l) => l.level === "info").map((l) => l.msg);
      expect(new Set(messages).size).toBe(messages.length);
      expect(messages.at(-1)).toBe(result.message);
      expect(telemetry.spans.find((s) => s.name === "rollout.wait")).toMatchObject({
        kind: "internal",
        attributes: { "k8s.namespace.name": "apps", [`k8s.${kind.toLowerCase()}.name`]: ref.name },
      });
    });

    const deadline = kind === "Deployment" ? "deadline_exceeded" : "timeout";
    test(`deadline mode ends as ${deadline}`, async () => {
      const { ref, generation } = await patched(kind, "deadline");
      const { result, ms } = await wait(ref, generation, 700);
      expect(outcome(result)).toBe(deadline);
      if (kind === "Deployment") {
        expect(result.message).toBe(`deployment "${ref.name}" exceeded its progress deadline`);
        expect(ms).toBeLessThan(500); // fast fail, not the timeout
      }
    });

    for (const mode of ["flap", "crashloop"] as const) {
      test(`${mode} times out at the deadline, not later`, async () => {
        const { ref, generation } = await patched(kind, mode);
        const { result, ms } = await wait(ref, generation, 600);
        expect(outcome(result)).toBe("timeout");
        expect(result.message).toStartWith(`timed out after 600ms waiting for ${kind} apps/${ref.name}: `);
        expect(ms).toBeGreaterThanOrEqual(590);
        expect(ms).toBeLessThan(1100);
      });
    }
  });
}

describe("waitForRollout watch recovery", () => {
  test("an in-stream 410 Expired re-lists and still settles", async () => {
    const { ref, generation } = await patched("Deployment", "slow");
    sim.faults.add({ method: "GET", path: /watch=1/, times: 1, fault: { type: "expired" } });
    const lists = () => sim.log.filter((e) => e.path.endsWith("/deployments") && !e.query.watch).length;
    const before = lists();
    const { result } = await wait(ref, generation, 5000);
    expect(result.ok).toBe(true);
    expect(lists() - before).toBeGreaterThanOrEqual(2);
  });

  test("a watch that hangs before headers is retried after the request timeout", async () => {
    const { ref, generation } = await patched("Deployment", "slow");
    sim.faults.add({ method: "GET", path: /watch=1/, times: 1, fault: { type: "hang" } });
    const { result } = await wait(ref, generation, 5000);
    expect(result.ok).toBe(true);
  });

  test("a deleted workload fails the wait", async () => {
    const { ref, generation } = await patched("Deployment", "flap");
    setTimeout(() => sim.deleteObject(ref.kind, ref.namespace, ref.name), 100);
    const { result } = await wait(ref, generation, 3000);
    expect(result).toEqual({
      ok: false,
      reason: "deleted",
      message: `Deployment apps/${ref.name} has been deleted`,
    });
  });

  test("the list and watch use the name field selector (RBAC resourceNames)", async () => {
    const { ref, generation } = await patched("DaemonSet", "healthy");
    sim.clearLog();
    await wait(ref, generation, 5000);
    const collection = sim.log.filter((e) => e.path.endsWith("/daemonsets"));
    expect(collection.length).toBeGreaterThan(0);
    for (const e of collection) expect(e.query.fieldSelector).toBe(`metadata.name=${ref.name}`);
  });
});

// A proxy that buffers chunked responses answers the watch with headers and then nothing, so the
// last observation is the LIST right after the patch; the verdict comes from a GET at the deadline.
describe("waitForRollout at its deadline, behind a watch that never answers", () => {
  const objectGets = (ref: ObjectRef) =>
    sim.log.filter(
      (e) => e.method === "GET" && e.path === `/apis/apps/v1/namespaces/apps/deployments/${ref.name}`,
    );
  const silentWatch = () =>
    sim.faults.add({ method: "GET", path: /watch=1/, times: 1, fault: { type: "silent" } });

  test("a workload that settled 100 ms after the patch is ok", async () => {
    const { ref, generation } = await patched("Deployment", "slow", 100);
    silentWatch();
    const { result } = await wait(ref, generation, 1000);
    expect(result).toEqual({ ok: true, message: `deployment "${ref.name}" successfully rolled out` });
    expect(
      sim.log.filter((e) => e.query.watch && e.query.fieldSelector === `metadata.name=${ref.name}`),
    ).toEqual([expect.objectContaining({ fault: "silent" })]);
    expect(objectGets(ref)).toHaveLength(1);
  });

  test("a workload that never settles still times out, with the re-read's message", async () => {
    const { ref, generation } = await patched("Deployment", "unsettled");
    silentWatch();
    const { result } = await wait(ref, generation, 1000);
    expect(result).toEqual({
      ok: false,
      reason: "timeout",
      message: `timed out after 1s waiting for Deployment apps/${ref.name}: Waiting for deployment "${ref.name}" rollout to finish: 1 out of 2 new replicas have been updated...`,
    });
    expect(objectGets(ref)).toHaveLength(1);
  });

  test("a re-read that fails (500) keeps the timeout and says so", async () => {
    const { ref, generation } = await patched("Deployment", "slow", 100);
    silentWatch();
    const path = `/apis/apps/v1/namespaces/apps/deployments/${ref.name}`;
    sim.faults.add({ method: "GET", path, fault: { type: "status", code: 500, reason: "InternalError" } });
    try {
      const { result } = await wait(ref, generation, 1000);
      expect(outcome(result)).toBe("timeout");
      expect(result.message).toContain(
        `; re-reading it at the deadline failed: Cannot GET Deployment apps/${ref.name}: InternalError (500)`,
      );
    } finally {
      sim.faults.clear();
    }
  });

  test("SIGTERM during the wait ends it with no re-read", async () => {
    const { ref, generation } = await patched("Deployment", "slow", 100);
    silentWatch();
    const tick = new AbortController();
    setTimeout(() => tick.abort(new Error("SIGTERM")), 300);
    const { result } = await wait(ref, generation, 1000, tick.signal);
    expect(outcome(result)).toBe("error");
    expect(result.message).toStartWith(`wait for Deployment apps/${ref.name} cancelled`);
    expect(objectGets(ref)).toHaveLength(0);
  });
});
