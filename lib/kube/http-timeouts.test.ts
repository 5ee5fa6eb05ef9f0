// Timeouts against a real (plain HTTP) server: the request timeout bounds headers and body of a
// normal request, only the headers of a watch stream; the tick's signal cancels without retry.
import { afterAll, describe, expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { memoryLogger } from "../log.ts";
import { ApiError } from "./errors.ts";
import { createKubeHttp, type KubeRequest } from "./http.ts";

const GET: KubeRequest = { method: "GET", path: "/", target: "Deployment apps/api" };

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error("expected a failure");
}

describe("timeouts against a real server", () => {
  // A server that sends headers and then stalls the body, or never answers at all.
  const server = Bun.serve({
    port: 0,
    fetch(req) {
      if (new URL(req.url).pathname === "/hang") return new Promise<Response>(() => {});
      const body = new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"partial":')) });
      return new Response(body, { headers: { "Content-Type": "application/json" } });
    },
  });
  afterAll(() => server.stop(true));
  const http = (signal = new AbortController().signal) =>
    createKubeHttp(
      { server: `http://127.0.0.1:${server.port}`, insecureSkipTlsVerify: false },
      { requestTimeoutMs: 150, signal, telemetry: recordingTelemetry(), log: memoryLogger(), maxRetries: 0 },
    );

  test("the timeout bounds the wait for headers", async () => {
    const started = Date.now();
    const e = await failure(http().json({ ...GET, path: "/hang" }));
    expect([e.reason, e.code, e.transient]).toEqual(["Timeout", 0, true]);
    // Without the timeout /hang never answers; the bound is loose because a loaded machine (CI
    // beside other jobs) has taken over a second to start the first request.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("the timeout bounds the body too", async () => {
    const started = Date.now();
    const e = await failure(http().json({ ...GET, path: "/stall" }));
    expect([e.reason, e.code]).toEqual(["Timeout", 0]);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("a stream is bounded only until headers arrive", async () => {
    const body = await http().stream({ ...GET, path: "/stall" }, new AbortController().signal);
    await Bun.sleep(300); // past requestTimeoutMs: the stream must still be open
    const reader = body.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe('{"partial":');
    await reader.cancel();
  });

  test("the tick's signal cancels a request and is not retried", async () => {
    const tick = new AbortController();
    setTimeout(() => tick.abort(), 30);
    const e = await failure(http(tick.signal).json({ ...GET, path: "/hang" }));
    expect([e.reason, e.transient]).toEqual(["Aborted", false]);
  });
});
