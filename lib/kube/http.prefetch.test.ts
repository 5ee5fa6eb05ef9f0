// KubeHttp.prefetch: a GET sent early is taken, once, by the json() of the same request.
import { expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { memoryLogger } from "../log.ts";
import { ApiError } from "./errors.ts";
import { createKubeHttp, type KubeRequest } from "./http.ts";

const GET: KubeRequest = {
  method: "GET",
  path: "/apis/apps/v1/namespaces/apps/deployments/api",
  target: "Deployment apps/api",
};

function setup(reply: (n: number) => Response) {
  const urls: string[] = [];
  const fetchFn = (async (url: string | URL) => {
    urls.push(String(url));
    return reply(urls.length);
  }) as unknown as typeof fetch;
  const http = createKubeHttp(
    { server: "https://kube.test:6443", insecureSkipTlsVerify: false, token: "t" },
    {
      requestTimeoutMs: 200,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
      fetch: fetchFn,
      sleep: async () => {},
      maxRetries: 0,
    },
  );
  return { http, urls };
}

const answer = (n: number) =>
  new Response(JSON.stringify({ n }), { headers: { date: `Tue, 01 Dec 2026 20:00:0${n} GMT` } });

test("the request goes out at prefetch; the next json of it takes the answer and its headers, once", async () => {
  const { http, urls } = setup(answer);
  http.prefetch(GET);
  expect(urls).toHaveLength(1);
  const dates: string[] = [];
  const onHeaders = (h: Headers) => void dates.push(h.get("date") as string);
  expect(await http.json({ ...GET, onHeaders })).toEqual({ n: 1 });
  expect(urls).toHaveLength(1);
  expect(dates).toEqual(["Tue, 01 Dec 2026 20:00:01 GMT"]);
  // Taken once: a second read asks again.
  expect(await http.json({ ...GET, onHeaders })).toEqual({ n: 2 });
  expect(urls).toHaveLength(2);
  expect(dates).toHaveLength(2);
});

test("a failed early read fails the json that takes it, with the server's reason", async () => {
  const { http, urls } = setup(
    () =>
      new Response(JSON.stringify({ kind: "Status", code: 403, reason: "Forbidden", message: "no" }), {
        status: 403,
      }),
  );
  http.prefetch(GET);
  const err = await http.json(GET).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).reason).toBe("Forbidden");
  expect(urls).toHaveLength(1);
});

test("another request does not take it, and only a GET can be sent early", async () => {
  const { http, urls } = setup(answer);
  http.prefetch(GET);
  expect(await http.json({ ...GET, path: `${GET.path}-proxy` })).toEqual({ n: 2 });
  expect(await http.json({ ...GET, query: { watch: "1" } })).toEqual({ n: 3 });
  expect(await http.json(GET)).toEqual({ n: 1 });
  expect(urls).toHaveLength(3);
  expect(() => http.prefetch({ ...GET, method: "PATCH" })).toThrow(/only a GET/);
});
