// KubeHttp's bound: at most MAX_IN_FLIGHT requests (hence connections) at once; a watch does not
// wait for a slot, so a long watch cannot hold up the reads.
import { expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { memoryLogger } from "../log.ts";
import { createKubeHttp, type KubeRequest, MAX_IN_FLIGHT } from "./http.ts";

const get = (i: number): KubeRequest => ({
  method: "GET",
  path: `/apis/apps/v1/namespaces/apps/deployments/w-${i}`,
  target: `Deployment apps/w-${i}`,
});

/** A server whose answers wait until release(); it counts what is in flight. */
function heldServer() {
  const seen = { inFlight: 0, most: 0, urls: [] as string[] };
  const gates: Array<() => void> = [];
  const fetchFn = (async (url: string | URL) => {
    seen.urls.push(String(url));
    seen.inFlight++;
    seen.most = Math.max(seen.most, seen.inFlight);
    await new Promise<void>((r) => gates.push(r));
    seen.inFlight--;
    return new Response(JSON.stringify({ url: String(url) }));
  }) as unknown as typeof fetch;
  const http = createKubeHttp(
    { server: "https://kube.test:6443", insecureSkipTlsVerify: false, token: "t" },
    {
      requestTimeoutMs: 5_000,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
      fetch: fetchFn,
      maxRetries: 0,
    },
  );
  return {
    http,
    seen,
    release: () => {
      for (const g of gates.splice(0)) g();
    },
  };
}

test(`a hundred reads at once: at most ${MAX_IN_FLIGHT} in flight, every one answered`, async () => {
  const { http, seen, release } = heldServer();
  const all = Promise.all(Array.from({ length: 100 }, (_, i) => http.json(get(i))));
  await Bun.sleep(5);
  expect(seen.inFlight).toBe(MAX_IN_FLIGHT);
  while (seen.urls.length < 100 || seen.inFlight > 0) {
    release();
    await Bun.sleep(1);
  }
  expect((await all).length).toBe(100);
  expect(seen.most).toBe(MAX_IN_FLIGHT);
});

test("a watch goes out while every slot is taken by a read", async () => {
  const { http, seen, release } = heldServer();
  const reads = Promise.all(Array.from({ length: MAX_IN_FLIGHT }, (_, i) => http.json(get(i))));
  await Bun.sleep(5);
  const watch = http.stream({ ...get(99), query: { watch: "true" } }, new AbortController().signal);
  await Bun.sleep(5);
  expect(seen.urls.some((u) => u.includes("watch=true"))).toBe(true);
  expect(seen.inFlight).toBe(MAX_IN_FLIGHT + 1);
  release();
  await Promise.all([reads, watch]);
});
