// The rollout wait against a misbehaving path to the API server, over real HTTPS to the simulator
// with a fetch that stands in for a proxy or load balancer in between.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { waitForRollout } from "../../lib/kube/rollout.ts";
import { createKubeClient, type KubeClient, type ObjectRef } from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { type ControllerMode, type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { recordingTelemetry } from "../support/recording-telemetry.ts";

let sim: SimApiServer;
let seq = 0;
beforeAll(async () => {
  sim = await startApiServer({ stepMs: 10, bookmarkMs: 50 });
});
afterAll(() => sim.stop());

function kubeWith(fetchImpl: typeof fetch): KubeClient {
  return createKubeClient(
    { server: sim.url, caPem: sim.caPem, insecureSkipTlsVerify: false, token: sim.token },
    {
      requestTimeoutMs: 1000,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
      fetch: fetchImpl,
    },
  );
}

async function patched(kube: KubeClient, mode: ControllerMode) {
  const ref: ObjectRef = { kind: "Deployment", namespace: "apps", name: `audit${++seq}` };
  sim.addWorkload({ ...ref, containers: [{ name: "app", image: "myorg/app:1" }], replicas: 2 });
  await Bun.sleep(50);
  sim.setMode("Deployment", "apps", ref.name, mode);
  const w = await kube.strategicPatch(ref, {
    spec: { template: { spec: { containers: [{ name: "app", image: "myorg/app:2" }] } } },
  });
  return { ref, generation: w.metadata.generation };
}

describe("rollout watch robustness", () => {
  test("a watch that ends at once (empty 200) is not re-opened in a hot loop", async () => {
    let watches = 0;
    const f = ((input: string | URL | Request, init?: RequestInit) => {
      if (String(input).includes("watch=1")) {
        watches++;
        // A round trip to a proxy on the same host: about a millisecond; honours abort like fetch.
        return Bun.sleep(1).then(() => {
          if (init?.signal?.aborted) throw init.signal.reason;
          return new Response("", { status: 200, headers: { "content-type": "application/json" } });
        });
      }
      return fetch(input, init);
    }) as typeof fetch;
    const kube = kubeWith(f);
    const { ref, generation } = await patched(kube, "unsettled");
    const result = await waitForRollout(kube, ref, {
      afterGeneration: generation,
      timeoutMs: 2000,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
      retryDelayMs: 20,
    });
    expect(result.ok).toBe(false);
    // client-go's RetryWatcher waits at least 1 s between restarts; 2 s of wait is a handful.
    expect(watches).toBeLessThanOrEqual(10);
  });

  test("a watch that stalls after its headers (no event, no EOF) does not turn a finished rollout into a timeout", async () => {
    const f = ((input: string | URL | Request, init?: RequestInit) => {
      if (String(input).includes("watch=1")) {
        if (init?.signal?.aborted) return Promise.reject(init.signal.reason);
        const signal = init?.signal;
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            signal?.addEventListener("abort", () => c.error(signal.reason), { once: true });
          },
        }); // never a byte, never closed
        return Promise.resolve(
          new Response(body, { status: 200, headers: { "content-type": "application/json" } }),
        );
      }
      return fetch(input, init);
    }) as typeof fetch;
    const kube = kubeWith(f);
    const { ref, generation } = await patched(kube, "healthy");
    const started = Date.now();
    const result = await waitForRollout(kube, ref, {
      afterGeneration: generation,
      timeoutMs: 6000,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
      retryDelayMs: 20,
      maxWatchSeconds: 1,
    });
    // The watch asked the server to end after 1 s; a client that never enforces that itself
    // waits out the whole rollout deadline on a half-open connection and fails a healthy rollout.
    expect(result.ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
