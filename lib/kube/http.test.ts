// The HTTP layer with an injected fetch: error mapping, the retry policy, token rotation, spans,
// the requests counted towards a collection.
import { describe, expect, test } from "bun:test";
import { recordingTelemetry } from "../../tests/support/recording-telemetry.ts";
import { COLLECT_EVERY } from "../collect.ts";
import { memoryLogger } from "../log.ts";
import { ApiError } from "./errors.ts";
import { createKubeHttp, type KubeRequest } from "./http.ts";
import type { Connection } from "./kubeconfig.ts";

const TOKEN = "tok-AAAA-secret";
const conn: Connection = { server: "https://kube.test:6443", insecureSkipTlsVerify: false, token: TOKEN };
const GET: KubeRequest = {
  method: "GET",
  path: "/apis/apps/v1/namespaces/apps/deployments/api",
  target: "Deployment apps/api",
};
const PATCH: KubeRequest = {
  ...GET,
  method: "PATCH",
  body: { a: 1 },
  contentType: "application/merge-patch+json",
};

const status = (code: number, reason: string | undefined, message: string) =>
  JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });

type Reply = () => Response | Promise<Response>;

function setup(
  replies: Reply[],
  extra: { tokenFile?: string; files?: Record<string, string>; collect?: () => void } = {},
) {
  const calls: Array<{ url: string; init: RequestInit & { tls?: unknown } }> = [];
  const sleeps: number[] = [];
  const telemetry = recordingTelemetry();
  const fetchFn = (async (url: string | URL, init: RequestInit) => {
    calls.push({ url: String(url), init });
    const reply = replies[Math.min(calls.length - 1, replies.length - 1)] as Reply;
    return reply();
  }) as unknown as typeof fetch;
  const http = createKubeHttp(
    { ...conn, tokenFile: extra.tokenFile },
    {
      requestTimeoutMs: 200,
      signal: new AbortController().signal,
      telemetry,
      log: memoryLogger(),
      fetch: fetchFn,
      readFile: (p) => extra.files?.[p] ?? "",
      sleep: async (ms) => void sleeps.push(ms),
      collect: extra.collect,
    },
  );
  return { http, calls, sleeps, telemetry };
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error("expected a failure");
}

const ok = () => new Response('{"ok":true}', { status: 200 });

type ErrCase = [name: string, reply: Reply, want: Partial<ApiError> & { message: string }, calls: number];

const errorCases: ErrCase[] = [
  [
    "404 keeps the Status reason and message",
    () => new Response(status(404, "NotFound", 'deployments.apps "api" not found'), { status: 404 }),
    {
      code: 404,
      reason: "NotFound",
      transient: false,
      message: 'Cannot GET Deployment apps/api: NotFound (404) deployments.apps "api" not found',
    },
    1,
  ],
  [
    "403 is terminal",
    () =>
      new Response(status(403, "Forbidden", 'deployments.apps "api" is forbidden: User "x" cannot get'), {
        status: 403,
      }),
    {
      code: 403,
      reason: "Forbidden",
      transient: false,
      message:
        'Cannot GET Deployment apps/api: Forbidden (403) deployments.apps "api" is forbidden: User "x" cannot get',
    },
    1,
  ],
  [
    "plain-text 429 with Retry-After: retried twice, honouring it",
    () =>
      new Response("Too many requests, please try again later.\n", {
        status: 429,
        headers: { "Retry-After": "3" },
      }),
    {
      code: 429,
      reason: "TooManyRequests",
      transient: true,
      retryAfter: 3,
      message:
        "Cannot GET Deployment apps/api: TooManyRequests (429) Too many requests, please try again later. (3 tries over Ns)",
    },
    3,
  ],
  [
    "500 InternalError is transient",
    () =>
      new Response(status(500, "InternalError", "Internal error occurred: etcdserver: leader changed"), {
        status: 500,
      }),
    {
      code: 500,
      reason: "InternalError",
      transient: true,
      message:
        "Cannot GET Deployment apps/api: InternalError (500) Internal error occurred: etcdserver: leader changed (3 tries over Ns)",
    },
    3,
  ],
  [
    "500 without a reason is a deterministic failure, not retried",
    () =>
      new Response(status(500, undefined, "map: map[image:x] does not contain declared merge key: name"), {
        status: 500,
      }),
    {
      code: 500,
      reason: "Unknown",
      transient: false,
      message:
        "Cannot GET Deployment apps/api: Unknown (500) map: map[image:x] does not contain declared merge key: name",
    },
    1,
  ],
  [
    "502 from a proxy with an HTML body",
    () => new Response("<html>bad gateway</html>", { status: 502 }),
    {
      code: 502,
      reason: "BadGateway",
      transient: true,
      message: "Cannot GET Deployment apps/api: BadGateway (502) <html>bad gateway</html> (3 tries over Ns)",
    },
    3,
  ],
  [
    "malformed 200 body",
    () => new Response("{not json", { status: 200 }),
    {
      code: 200,
      reason: "MalformedResponse",
      transient: false,
      message: "Cannot GET Deployment apps/api: MalformedResponse (200) response is not JSON",
    },
    1,
  ],
  [
    "connection reset is a transient NetworkError",
    () => Promise.reject(Object.assign(new Error("socket closed"), { code: "ECONNRESET" })),
    {
      code: 0,
      reason: "NetworkError",
      transient: true,
      message:
        "Cannot GET Deployment apps/api: NetworkError kube.test:6443: ECONNRESET: socket closed (3 tries over Ns)",
    },
    3,
  ],
  [
    "an untrusted certificate is a terminal TLSError",
    () =>
      Promise.reject(
        Object.assign(new Error("unable to verify the first certificate"), {
          code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
        }),
      ),
    {
      code: 0,
      reason: "TLSError",
      transient: false,
      message:
        "Cannot GET Deployment apps/api: TLSError kube.test:6443: UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate",
    },
    1,
  ],
];

describe("error mapping and retries of a GET", () => {
  for (const [name, reply, want, calls] of errorCases) {
    test(name, async () => {
      const s = setup([reply]);
      const e = await failure(s.http.json(GET));
      // The total time of the tries varies; how many there were does not.
      const message = e.message.replace(/ over \d+\.\ds\)$/, " over Ns)");
      expect({ code: e.code, reason: e.reason, transient: e.transient, message }).toEqual({
        code: want.code as number,
        reason: want.reason as string,
        transient: want.transient as boolean,
        message: want.message,
      });
      if (want.retryAfter !== undefined) expect(s.sleeps).toEqual([3000, 3000]);
      expect(s.calls.length).toBe(calls);
      expect(s.telemetry.spans.map((sp) => sp.attributes["http.request.resend_count"])).toEqual(
        Array.from({ length: calls }, (_, i) => (i === 0 ? undefined : i)),
      );
    });
  }
});

describe("retry policy", () => {
  test("a transient GET failure followed by success returns the body; backoff grows", async () => {
    const s = setup([() => new Response("", { status: 503 }), () => new Response("", { status: 504 }), ok]);
    expect(await s.http.json(GET)).toEqual({ ok: true });
    expect(s.sleeps).toEqual([200, 400]);
  });

  test("a write is never retried, even on 503", async () => {
    const s = setup([() => new Response("", { status: 503 }), ok]);
    expect((await failure(s.http.json(PATCH))).code).toBe(503);
    expect(s.calls.length).toBe(1);
  });

  test("a write is never retried on a connection reset", async () => {
    const s = setup([() => Promise.reject(new Error("reset")), ok]);
    expect((await failure(s.http.json(PATCH))).reason).toBe("NetworkError");
    expect(s.calls.length).toBe(1);
  });
});

describe("token handling", () => {
  test("the token file is re-read per request, and once more after a 401, even for a PATCH", async () => {
    const files: Record<string, string> = { "/sa/token": "first\n" };
    const s = setup(
      [
        () => {
          files["/sa/token"] = "second";
          return new Response(status(401, "Unauthorized", "Unauthorized"), { status: 401 });
        },
        ok,
      ],
      { tokenFile: "/sa/token", files },
    );
    expect(await s.http.json(PATCH)).toEqual({ ok: true });
    const auth = s.calls.map((c) => (c.init.headers as Record<string, string>).Authorization);
    expect(auth).toEqual(["Bearer first", "Bearer second"]);
  });

  test("a 401 without a token file is not retried", async () => {
    const s = setup([() => new Response(status(401, "Unauthorized", "Unauthorized"), { status: 401 })]);
    expect((await failure(s.http.json(GET))).message).toBe(
      "Cannot GET Deployment apps/api: Unauthorized (401) Unauthorized",
    );
    expect(s.calls.length).toBe(1);
  });

  test("the token appears in no error, span or URL", async () => {
    const s = setup([() => new Response(status(403, "Forbidden", "nope"), { status: 403 })]);
    const e = await failure(s.http.json({ ...GET, query: { fieldSelector: "metadata.name=api" } }));
    const seen = JSON.stringify({
      e,
      m: e.message,
      url: e.url,
      spans: s.telemetry.spans,
      urls: s.calls.map((c) => c.url),
    });
    expect(seen).not.toContain(TOKEN);
    const auth = s.calls.map((c) => (c.init.headers as Record<string, string>).Authorization);
    expect(auth).toEqual([`Bearer ${TOKEN}`]);
  });
});

describe("spans and TLS options", () => {
  test("one client span per request with the HTTP attributes", async () => {
    const s = setup([() => new Response(status(404, "NotFound", "x"), { status: 404 })]);
    await failure(s.http.json({ ...GET, query: { fieldSelector: "metadata.name=api" } }));
    expect(s.telemetry.spans).toEqual([
      {
        name: "GET",
        kind: "client",
        attributes: {
          "http.request.method": "GET",
          "server.address": "kube.test",
          "server.port": 6443,
          "url.full":
            "https://kube.test:6443/apis/apps/v1/namespaces/apps/deployments/api?fieldSelector=metadata.name%3Dapi",
          "http.response.status_code": 404,
        },
        events: [],
        error: { type: "404", message: "Cannot GET Deployment apps/api: NotFound (404) x" },
        ended: true,
      },
    ]);
  });

  test("TLS verification is on unless the kubeconfig disables it", async () => {
    const s = setup([ok]);
    await s.http.json(GET);
    expect(s.calls[0]?.init.tls).toEqual({
      ca: undefined,
      cert: undefined,
      key: undefined,
      rejectUnauthorized: true,
    });
  });
});

test("a collection every COLLECT_EVERY requests settled, failed ones counted too", async () => {
  let collections = 0;
  const requests = 2 * COLLECT_EVERY + 1;
  const replies = Array.from({ length: requests }, (_, i) =>
    i % 10 === 9 ? () => new Response(status(404, "NotFound", "x"), { status: 404 }) : ok,
  );
  const s = setup(replies, { collect: () => collections++ });
  const answers = await Promise.allSettled(replies.map(() => s.http.json(GET)));
  expect(answers.filter((a) => a.status === "rejected").length).toBe(40);
  expect(s.calls.length).toBe(requests);
  expect(collections).toBe(2);
});
