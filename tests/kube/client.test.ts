// The Kubernetes client against the simulated API server over real HTTPS: TLS trust, token
// rotation, every error shape mapped to ApiError, patch semantics, Events.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiError } from "../../lib/kube/errors.ts";
import { buildEvent } from "../../lib/kube/events.ts";
import { type Connection, resolveConnection } from "../../lib/kube/kubeconfig.ts";
import { createKubeClient, type KubeClient, type ObjectRef } from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { generateTls } from "../../sim/tls.ts";
import { recordingTelemetry } from "../support/recording-telemetry.ts";

let sim: SimApiServer;
let dir: string;
let tokenFile: string;
const api: ObjectRef = { kind: "Deployment", namespace: "apps", name: "api" };
const apiPath = "/apis/apps/v1/namespaces/apps/deployments/api";
const seenErrors: ApiError[] = [];

beforeAll(async () => {
  sim = await startApiServer({ stepMs: 5 });
  dir = mkdtempSync(join(tmpdir(), "kube-client-"));
  tokenFile = join(dir, "token");
  sim.addWorkload({ ...api, containers: [{ name: "api", image: "myorg/api:stable" }], replicas: 2 });
});
afterAll(async () => {
  await sim.stop();
  // Collected from every test: no message, URL or cause ever carried a token.
  const text = seenErrors.map((e) => `${e.message} ${e.url} ${String(e.cause)}`).join("\n");
  expect(text).not.toContain(sim.token);
  expect(text).not.toContain("old-token");
});
beforeEach(() => {
  sim.faults.clear();
  sim.clearLog();
  writeFileSync(tokenFile, `${sim.token}\n`);
});

function client(conn?: Partial<Connection>, requestTimeoutMs = 2000): KubeClient {
  const base: Connection = { server: sim.url, caPem: sim.caPem, insecureSkipTlsVerify: false, tokenFile };
  return createKubeClient(
    { ...base, ...conn },
    {
      requestTimeoutMs,
      signal: new AbortController().signal,
      telemetry: recordingTelemetry(),
      log: memoryLogger(),
    },
  );
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    seenErrors.push(e as ApiError);
    return e as ApiError;
  }
  throw new Error("expected an ApiError");
}

const requestsTo = (path: string) => sim.log.filter((e) => e.path === path).length;

describe("TLS", () => {
  test("a kubeconfig with the cluster CA connects and reads a typed workload", async () => {
    const kubeconfig = join(dir, "config");
    writeFileSync(kubeconfig, sim.kubeconfig({ namespace: "apps" }));
    const conn = resolveConnection({ kubeconfigFlag: kubeconfig, env: {} });
    const w = await client(conn).get(api);
    expect(w.kind).toBe("Deployment");
    expect(w.metadata).toMatchObject({ name: "api", namespace: "apps", generation: 1 });
    expect(w.spec.template.spec.containers).toEqual([{ name: "api", image: "myorg/api:stable" }]);
  });

  test("a server certificate not signed by the configured CA is refused, and not retried", async () => {
    await client().get(api); // a pooled, trusted connection must not be reused for the other CA
    const e = await failure(client({ caPem: generateTls().caPem }).get(api));
    expect([e.code, e.reason, e.transient]).toEqual([0, "TLSError", false]);
    expect(e.message).toStartWith("Cannot GET Deployment apps/api: TLSError");
  });

  test("without a CA the system roots do not trust the cluster either", async () => {
    expect((await failure(client({ caPem: undefined }).get(api))).reason).toBe("TLSError");
  });

  test("insecure-skip-tls-verify is honoured only when set", async () => {
    const w = await client({ caPem: undefined, insecureSkipTlsVerify: true }).get(api);
    expect(w.metadata.name).toBe("api");
  });
});

describe("tokens", () => {
  test("a rotated token file is picked up on the next request", async () => {
    const c = client();
    await c.get(api);
    sim.rotateToken("new-token-1");
    writeFileSync(tokenFile, "new-token-1\n");
    expect((await c.get(api)).metadata.name).toBe("api");
  });

  test("a stale token is a 401 Unauthorized, retried once after re-reading the file", async () => {
    writeFileSync(tokenFile, "old-token");
    const e = await failure(client().get(api));
    expect(e.message).toMatch(
      /^Cannot GET Deployment apps\/api: Unauthorized \(401\) Unauthorized \(2 tries over \d+\.\ds\)$/,
    );
    expect(requestsTo(apiPath)).toBe(2);
  });

  test("a static token from the kubeconfig works without a file", async () => {
    const w = await client({ tokenFile: undefined, token: sim.token }).get(api);
    expect(w.metadata.name).toBe("api");
  });
});

type FaultCase = [
  name: string,
  method: "GET" | "PATCH",
  fault: Parameters<SimApiServer["faults"]["add"]>[0]["fault"],
  want: { code: number; reason: string; transient: boolean },
  requests: number,
];

const faultCases: FaultCase[] = [
  [
    "403 Forbidden",
    "GET",
    { type: "status", code: 403 },
    { code: 403, reason: "Forbidden", transient: false },
    1,
  ],
  [
    "404 NotFound",
    "GET",
    { type: "status", code: 404 },
    { code: 404, reason: "NotFound", transient: false },
    1,
  ],
  [
    "429 plain text, retried with Retry-After",
    "GET",
    { type: "status", code: 429, plainText: true, retryAfter: 1 },
    { code: 429, reason: "TooManyRequests", transient: true },
    3,
  ],
  [
    "500 InternalError retried on a read",
    "GET",
    { type: "status", code: 500 },
    { code: 500, reason: "InternalError", transient: true },
    3,
  ],
  [
    "503 on a write is not retried",
    "PATCH",
    { type: "status", code: 503 },
    { code: 503, reason: "ServiceUnavailable", transient: true },
    1,
  ],
  [
    "malformed body",
    "GET",
    { type: "malformed" },
    { code: 200, reason: "MalformedResponse", transient: false },
    1,
  ],
  ["reset on a write", "PATCH", { type: "reset" }, { code: 0, reason: "NetworkError", transient: true }, 1],
  [
    "hang hits the request timeout, three times on a read",
    "GET",
    { type: "hang" },
    { code: 0, reason: "Timeout", transient: true },
    3,
  ],
  [
    "hang on a write hits the timeout once",
    "PATCH",
    { type: "hang" },
    { code: 0, reason: "Timeout", transient: true },
    1,
  ],
];

describe("faults map to ApiError", () => {
  for (const [name, method, fault, want, requests] of faultCases) {
    test(name, async () => {
      sim.faults.add({ method, path: apiPath, fault });
      const c = client({}, 300);
      const e = await failure(
        method === "GET" ? c.get(api) : c.mergePatch(api, { metadata: { labels: { a: "b" } } }),
      );
      expect({ code: e.code, reason: e.reason, transient: e.transient }).toEqual(want);
      expect(e.message).toStartWith(`Cannot ${method} Deployment apps/api: ${want.reason}`);
      expect(requestsTo(apiPath)).toBe(requests);
    });
  }

  test("a single 503 on a read is absorbed by the retry", async () => {
    sim.faults.add({ method: "GET", path: apiPath, times: 1, fault: { type: "status", code: 503 } });
    expect((await client().get(api)).metadata.name).toBe("api");
    expect(requestsTo(apiPath)).toBe(2);
  });

  test("a real 404 carries the server's message", async () => {
    const e = await failure(client().get({ ...api, name: "nope" }));
    expect(e.message).toBe(
      'Cannot GET Deployment apps/nope: NotFound (404) deployments.apps "nope" not found',
    );
  });
});

describe("patches", () => {
  test("merge patch: removing an absent annotation is fine", async () => {
    const before = await client().get(api);
    const after = await client().mergePatch(api, {
      metadata: { annotations: { "image-refresh.io/refresh-attempt": null } },
    });
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion); // a no-op write
  });

  test("a stale resourceVersion precondition is 409 Conflict", async () => {
    const c = client();
    const w = await c.get(api);
    await c.mergePatch(api, { metadata: { annotations: { "x.io/n": String(Date.now()) } } });
    const e = await failure(
      c.mergePatch(api, {
        metadata: { resourceVersion: w.metadata.resourceVersion, annotations: { "x.io/n": "1" } },
      }),
    );
    expect([e.code, e.reason, e.transient]).toEqual([409, "Conflict", false]);
    expect(e.statusMessage).toContain("the object has been modified");
  });

  test("a failed JSON-patch test is 422 Invalid", async () => {
    const e = await failure(
      client().jsonPatch(api, [{ op: "test", path: "/metadata/annotations/x.io~1n", value: "never" }]),
    );
    expect([e.code, e.reason]).toEqual([422, "Invalid"]);
    expect(e.message).toBe(
      "Cannot PATCH Deployment apps/api: Invalid (422) the server rejected our request due to an error in our request",
    );
  });

  test("a strategic patch of one container's image bumps the generation and names the field manager", async () => {
    const c = client();
    const before = await c.get(api);
    const after = await c.strategicPatch(api, {
      spec: {
        template: { spec: { containers: [{ name: "api", image: "myorg/api@sha256:".padEnd(81, "a") }] } },
      },
    });
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(sim.log.at(-1)).toMatchObject({
      method: "PATCH",
      query: { fieldManager: "image-refresh" },
      contentType: "application/strategic-merge-patch+json",
    });
  });
});

describe("events", () => {
  test("an events.k8s.io/v1 Event is accepted", async () => {
    const c = client();
    const state = await c.get(api);
    const event = buildEvent({
      regarding: state,
      type: "Normal",
      reason: "Refreshed",
      action: "Refresh",
      note: "api pinned to a new digest",
      reportingInstance: "image-refresh-test",
    });
    await c.createEvent("apps", event);
    expect(sim.events.at(-1)).toMatchObject({
      reason: "Refreshed",
      regarding: { name: "api", uid: state.metadata.uid },
    });
  });
});
