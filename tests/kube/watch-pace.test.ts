// Watches back off: against a server that answers every watch 410 Expired, the rollout wait and
// the pod watch re-list and re-watch at most once a second each, for as long as they wait.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { watchPods } from "../../lib/kube/pod-watch.ts";
import { waitForRollout } from "../../lib/kube/rollout.ts";
import { createKubeClient, type KubeClient, type ObjectRef } from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { recordingTelemetry } from "../support/recording-telemetry.ts";

let sim: SimApiServer;
let kube: KubeClient;

beforeAll(async () => {
  sim = await startApiServer({ stepMs: 10 });
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

const WAIT_MS = 2500;
/** At most one start a second over the wait, and the first at once. */
const MOST = Math.ceil(WAIT_MS / 1000) + 1;

test("the rollout wait against 410 Expired forever: at most one list and one watch a second", async () => {
  const ref: ObjectRef = { kind: "Deployment", namespace: "apps", name: "expired" };
  sim.addWorkload({ ...ref, containers: [{ name: "app", image: "myorg/app:1" }], mode: "unsettled" });
  sim.faults.add({ method: "GET", path: /deployments\?.*watch=1/, fault: { type: "expired" } });
  sim.clearLog();
  const result = await waitForRollout(kube, ref, {
    afterGeneration: 1,
    timeoutMs: WAIT_MS,
    signal: new AbortController().signal,
    telemetry: recordingTelemetry(),
    log: memoryLogger(),
  });
  sim.faults.clear();
  expect(result.ok).toBe(false);
  const deployments = sim.log.filter((e) => e.path === "/apis/apps/v1/namespaces/apps/deployments");
  const watches = deployments.filter((e) => e.query.watch).length;
  const lists = deployments.length - watches;
  expect(watches).toBeGreaterThanOrEqual(2);
  expect(watches).toBeLessThanOrEqual(MOST);
  expect(lists).toBeLessThanOrEqual(MOST);
});

test("the pod watch against 410 Expired forever: at most one list and one watch a second", async () => {
  sim.addWorkload({
    kind: "Deployment",
    namespace: "pods",
    name: "p",
    containers: [{ name: "app", image: "a" }],
  });
  sim.faults.add({ method: "GET", path: /pods\?.*watch=1/, fault: { type: "expired" } });
  sim.clearLog();
  const found = await watchPods(kube.pods, {
    namespace: "pods",
    labelSelector: "app=p",
    signal: AbortSignal.timeout(WAIT_MS),
    log: memoryLogger(),
    judge: () => undefined,
  });
  sim.faults.clear();
  expect(found).toBeUndefined();
  const pods = sim.log.filter((e) => e.path === "/api/v1/namespaces/pods/pods");
  const watches = pods.filter((e) => e.query.watch).length;
  expect(watches).toBeGreaterThanOrEqual(2);
  expect(watches).toBeLessThanOrEqual(MOST);
  expect(pods.length - watches).toBeLessThanOrEqual(MOST);
});
