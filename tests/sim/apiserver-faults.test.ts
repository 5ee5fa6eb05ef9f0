// Fault injection and the request log of the simulated API server.
import { describe, expect, test } from "bun:test";
import { call, objectPath, patch } from "../../sim/apiserver/driver.ts";
import { seededServer } from "./apiserver-harness.ts";

const { sim } = await seededServer();
const dep = objectPath("Deployment", "apps", "api");

describe("fault injection", () => {
  test("a status fault answers a Status with the code's reason, `times` requests only", async () => {
    sim.faults.add({ method: "GET", path: dep, times: 2, fault: { type: "status", code: 503 } });
    const first = await call(sim, dep);
    expect(first.status).toBe(503);
    expect(first.json).toMatchObject({ kind: "Status", reason: "ServiceUnavailable", code: 503 });
    expect((await call(sim, dep)).status).toBe(503);
    expect((await call(sim, dep)).status).toBe(200);
  });

  test("a 403 fault can carry the real Forbidden message", async () => {
    const message =
      'deployments.apps "api" is forbidden: User "system:serviceaccount:ops:refresher" cannot patch resource "deployments" in API group "apps" in the namespace "apps"';
    sim.faults.add({ method: "PATCH", path: dep, times: 1, fault: { type: "status", code: 403, message } });
    const r = await patch(sim, dep, "application/merge-patch+json", {});
    expect(r.json).toMatchObject({ status: "Failure", reason: "Forbidden", message, code: 403 });
  });

  test("a plain-text 429 with Retry-After, as API Priority and Fairness answers", async () => {
    sim.faults.add({
      path: dep,
      times: 1,
      fault: { type: "status", code: 429, retryAfter: 3, plainText: true },
    });
    const r = await call(sim, dep);
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("3");
    expect(r.headers.get("content-type")).toStartWith("text/plain");
    expect(r.text).toBe("Too many requests, please try again later.\n");
  });

  test("a JSON fault with retryAfter carries details.retryAfterSeconds and the header", async () => {
    sim.faults.add({ path: dep, times: 1, fault: { type: "status", code: 504, retryAfter: 2 } });
    const r = await call(sim, dep);
    expect(r.headers.get("retry-after")).toBe("2");
    expect(r.json.details).toEqual({ retryAfterSeconds: 2 });
    expect(r.json.reason).toBe("Timeout");
  });

  test("reset destroys the connection before any response", async () => {
    sim.faults.add({ method: "PATCH", path: dep, times: 1, fault: { type: "reset" } });
    await expect(patch(sim, dep, "application/merge-patch+json", {})).rejects.toThrow();
    expect(sim.log.at(-1)).toMatchObject({ method: "PATCH", path: dep, fault: "reset", status: 0 });
    expect((await patch(sim, dep, "application/merge-patch+json", {})).status).toBe(200);
  });

  test("lost: the write is carried out, then the connection dies instead of the answer", async () => {
    sim.faults.add({ method: "PATCH", path: dep, times: 1, fault: { type: "lost" } });
    const body = { metadata: { annotations: { "example.com/landed": "yes" } } };
    await expect(patch(sim, dep, "application/merge-patch+json", body)).rejects.toThrow();
    expect(sim.log.filter((e) => e.method === "PATCH").map((e) => [e.fault, e.status])).toEqual([
      ["lost", 0],
    ]);
    expect((await call(sim, dep)).json.metadata.annotations).toMatchObject({ "example.com/landed": "yes" });
  });

  test("Bun's fetch retries a GET once on a reset keep-alive connection, so only a lasting reset fails it", async () => {
    await call(sim, "/version"); // leaves a pooled connection behind
    sim.faults.add({ method: "GET", path: dep, times: 1, fault: { type: "reset" } });
    expect((await call(sim, dep)).status).toBe(200);
    expect(sim.log.filter((e) => e.path === dep).map((e) => e.fault ?? "ok")).toEqual(["reset", "ok"]);
    sim.faults.add({ method: "GET", path: dep, fault: { type: "reset" } });
    await expect(call(sim, dep)).rejects.toThrow();
  });

  test("hang never answers until the client gives up", async () => {
    sim.faults.add({ path: dep, times: 1, fault: { type: "hang" } });
    const t0 = Date.now();
    await expect(call(sim, dep, { signal: AbortSignal.timeout(150) })).rejects.toThrow();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect((await call(sim, dep)).status).toBe(200);
  });

  test("delay answers normally, late", async () => {
    sim.faults.add({ path: dep, times: 1, fault: { type: "delay", ms: 120 } });
    const t0 = Date.now();
    expect((await call(sim, dep)).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(115);
  });

  test("malformed answers 200 with truncated JSON", async () => {
    sim.faults.add({ path: dep, times: 1, fault: { type: "malformed" } });
    const r = await call(sim, dep);
    expect(r.status).toBe(200);
    expect(r.json).toBeUndefined();
    expect(() => JSON.parse(r.text)).toThrow();
  });

  test("a RegExp path matches path or path+query; method filters; forever without times", async () => {
    sim.faults.add({ method: "GET", path: /watch=1/, fault: { type: "status", code: 500 } });
    expect((await call(sim, `${objectPath("Deployment", "apps")}?watch=1&timeoutSeconds=1`)).status).toBe(
      500,
    );
    expect((await call(sim, `${objectPath("Deployment", "apps")}?watch=1&timeoutSeconds=1`)).status).toBe(
      500,
    );
    expect((await call(sim, dep)).status).toBe(200);
    sim.faults.clear();
    expect((await call(sim, `${objectPath("Deployment", "apps")}?watch=1&timeoutSeconds=1`)).status).toBe(
      200,
    );
  });
});

describe("request log", () => {
  test("records method, path, query, content type, body text, status and times in order", async () => {
    await call(sim, `${dep}?pretty=1`);
    await patch(sim, `${dep}?fieldManager=t`, "application/merge-patch+json; charset=utf-8", {
      metadata: { annotations: { "x.io/a": "1" } },
    });
    const [get, write] = sim.log;
    expect(get).toMatchObject({ method: "GET", path: dep, query: { pretty: "1" }, status: 200 });
    expect(write).toMatchObject({
      method: "PATCH",
      path: dep,
      query: { fieldManager: "t" },
      contentType: "application/merge-patch+json; charset=utf-8",
      body: '{"metadata":{"annotations":{"x.io/a":"1"}}}',
      status: 200,
    });
    expect(write?.start ?? 0).toBeGreaterThanOrEqual(get?.end ?? Infinity);
    sim.clearLog();
    expect(sim.log).toEqual([]);
  });
});
