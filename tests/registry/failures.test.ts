// Per-image failures against the simulated registry: each one is a WARNING for that image while
// the others resolve, and a 429 stops every further request to the registry for the tick.
import { describe, expect, test } from "bun:test";
import { resolveDigests } from "../../lib/registry/client.ts";
import { registryHarness } from "./harness.ts";

const { sim, options } = registryHarness(300);

const manifest = (repo: string) => `/v2/${repo}/manifests/v1`;
const reasons = (m: Map<string, { ok: boolean; reason?: string }>) =>
  Object.fromEntries([...m].map(([k, v]) => [k, v.ok ? "ok" : v.reason]));

describe("per-image failures", () => {
  test("401, 403, 404, 500, hang, reset, malformed and missing digest each fail one image only", async () => {
    const r = await sim();
    const repos = [
      "f/ok",
      "f/u",
      "f/forbidden",
      "f/missing",
      "f/boom",
      "f/hang",
      "f/reset",
      "f/bad",
      "f/nodigest",
    ];
    for (const repo of repos) if (repo !== "f/missing") r.push(repo, "v1");
    r.faults.add({ path: manifest("f/u"), fault: { type: "status", code: 401 } });
    r.faults.add({ path: manifest("f/forbidden"), fault: { type: "status", code: 403 } });
    r.faults.add({ path: manifest("f/boom"), fault: { type: "status", code: 500 } });
    r.faults.add({ path: manifest("f/hang"), fault: { type: "hang" } });
    r.faults.add({ path: manifest("f/reset"), fault: { type: "reset" } });
    r.faults.add({ path: manifest("f/bad"), fault: { type: "malformed" } });
    r.faults.add({ path: manifest("f/nodigest"), fault: { type: "status", code: 200 } });
    const t = options(r);
    const got = await resolveDigests(repos, "v1", t.opts);
    expect(reasons(got)).toEqual({
      "f/ok": "ok",
      "f/u": "unauthorized",
      "f/forbidden": "forbidden",
      "f/missing": "not_found",
      "f/boom": "server_error",
      "f/hang": "timeout",
      "f/reset": "network",
      "f/bad": "bad_digest",
      "f/nodigest": "bad_digest",
    });
    // Never a GET fallback, and the client sends one HEAD per repository: one HEAD span each.
    // The registry may hear a HEAD more than once: Bun's fetch itself re-sends an idempotent
    // request when a reused keep-alive connection is reset or closed as it is reused (the reset
    // repository's every time, under load now and then another, once or twice), below the client.
    const { head, ...rest } = r.counts();
    expect(rest).toEqual({ challenge: 1, token: 1, get: 0 });
    const sent = t.telemetry.spans
      .filter((s) => s.name === "HEAD")
      .map((s) => String(s.attributes["url.full"]));
    expect(sent.map((u) => new URL(u).pathname).sort()).toEqual(repos.map(manifest).sort());
    const heard = new Set(r.log.filter((e) => e.method === "HEAD").map((e) => e.path));
    expect([...heard].sort()).toEqual(repos.map(manifest).sort());
    expect(head).toBeGreaterThanOrEqual(repos.length);
    const warned = t.log.lines.filter((l) => l.level === "warn").map((l) => l.fields.repository);
    expect(warned.sort()).toEqual(repos.filter((x) => x !== "f/ok").sort());
    const errors = t.telemetry.spans.filter((s) => s.name === "HEAD" && s.error).map((s) => s.error?.type);
    expect(errors.sort()).toEqual(["401", "403", "404", "500", "ECONNRESET", "timeout"].sort());
  });

  test("a body that stalls after the headers is a timeout (the timeout covers the whole response)", async () => {
    const r = await sim();
    r.push("s/app", "v1");
    r.faults.add({ path: "/token", fault: { type: "hang" } });
    const t = options(r);
    const started = performance.now();
    const got = await resolveDigests(["s/app"], "v1", t.opts);
    expect(got.get("s/app")).toMatchObject({ ok: false, reason: "timeout" });
    expect(performance.now() - started).toBeLessThan(1500);
  });

  test("the tick's deadline aborts requests in flight and sends no queued ones", async () => {
    const r = await sim({ auth: "none" });
    r.push("d/app", "v1");
    r.push("d/next", "v1");
    r.faults.add({ path: manifest("d/app"), fault: { type: "hang" } });
    const tick = new AbortController();
    setTimeout(() => tick.abort(new Error("tick deadline")), 100);
    const t = options(r, { signal: tick.signal, requestTimeoutMs: 10_000, concurrency: 1 });
    const got = await resolveDigests(["d/app", "d/next"], "v1", t.opts);
    expect(got.get("d/app")).toMatchObject({
      reason: "timeout",
      message: expect.stringMatching(/tick's deadline/),
    });
    expect(got.get("d/next")).toMatchObject({
      reason: "timeout",
      // Not sent, and the message names the cause the tick gave (a deadline here, or a signal).
      message: "not requested: tick deadline",
    });
    expect(r.counts().head).toBe(1);
  });

  test("a malformed token answer fails every image without HEADs", async () => {
    const r = await sim();
    r.faults.add({ path: "/token", fault: { type: "malformed" } });
    const got = await resolveDigests(["m/a", "m/b"], "v1", options(r).opts);
    expect(reasons(got)).toEqual({ "m/a": "server_error", "m/b": "server_error" });
    expect(r.counts().head).toBe(0);
  });
});

describe("429 ends all requests to the registry for the tick", () => {
  test("a HEAD 429: remaining repositories are skipped and Retry-After/ratelimit-remaining are logged", async () => {
    const r = await sim({ rateLimit: { limit: 100, windowSeconds: 21600 } });
    const repos = ["q/a", "q/b", "q/c", "q/d"];
    for (const repo of repos) r.push(repo, "v1");
    r.faults.add({ path: manifest("q/b"), fault: { type: "status", code: 429, retryAfter: 120 } });
    const t = options(r, { concurrency: 1 });
    const got = await resolveDigests(repos, "v1", t.opts);
    expect(reasons(got)).toEqual({
      "q/a": "ok",
      "q/b": "rate_limited",
      "q/c": "rate_limited",
      "q/d": "rate_limited",
    });
    expect(got.retryAfter?.delayMs).toBe(120_000);
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 2, get: 0 });
    const note = t.log.lines.find((l) => l.msg.includes("rate limiting"));
    expect(note?.fields).toMatchObject({ retry_after: "120", ratelimit_remaining: "100;w=21600" });
    expect(t.log.lines.find((l) => l.fields.repository === "q/b")?.fields).toMatchObject({ status: 429 });
  });

  test("a token 429 stops before any HEAD", async () => {
    const r = await sim();
    r.faults.add({ path: "/token", fault: { type: "status", code: 429, retryAfter: 30 } });
    const t = options(r);
    const got = await resolveDigests(["q/a", "q/b"], "v1", t.opts);
    expect(reasons(got)).toEqual({ "q/a": "rate_limited", "q/b": "rate_limited" });
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 0, get: 0 });
    expect(t.log.lines.find((l) => l.msg.includes("rate limiting"))?.fields.retry_after).toBe("30");
  });

  test("the first HEAD goes alone: every other one starts after its answer", async () => {
    const r = await sim({ auth: "none" });
    const repos = Array.from({ length: 6 }, (_, i) => `p/app-${i}`);
    for (const repo of repos) r.push(repo, "v1");
    r.faults.add({ path: manifest("p/app-0"), fault: { type: "delay", ms: 60 } });
    const got = await resolveDigests(repos, "v1", options(r, { concurrency: 4 }).opts);
    expect(Object.values(reasons(got))).toEqual(Array(6).fill("ok"));
    const heads = r.log.filter((e) => e.method === "HEAD");
    const first = heads.find((e) => e.path === manifest("p/app-0"));
    const others = heads.filter((e) => e !== first);
    expect(others.length).toBe(5);
    for (const e of others) expect([e.path, e.start >= (first?.end ?? Infinity)]).toEqual([e.path, true]);
  });

  test("a 429 aborts the HEADs in flight and nothing new is sent after it", async () => {
    const r = await sim({ auth: "none" });
    const repos = Array.from({ length: 12 }, (_, i) => `p/app-${i}`);
    for (const repo of repos) r.push(repo, "v1");
    // app-0 alone, then app-1..4 together: app-3 is refused at once while the others are held.
    r.faults.add({ path: manifest("p/app-3"), fault: { type: "status", code: 429, retryAfter: 600 } });
    for (const i of [1, 2, 4])
      r.faults.add({ path: manifest(`p/app-${i}`), fault: { type: "delay", ms: 150 } });
    const got = await resolveDigests(repos, "v1", options(r, { concurrency: 4 }).opts);
    // app-1, -2 and -4 were sent with app-3; an aborted one may be cut before the server saw it.
    // Nothing after them is ever sent.
    const heard = new Set(r.log.filter((e) => e.method === "HEAD").map((e) => e.path));
    expect(heard.has(manifest("p/app-0")) && heard.has(manifest("p/app-3"))).toBe(true);
    for (let i = 5; i < 12; i++) expect(heard.has(manifest(`p/app-${i}`))).toBe(false);
    expect(r.counts().head).toBeLessThanOrEqual(5);
    const how = (repo: string) => {
      const v = got.get(repo);
      return v?.ok ? "ok" : `${v?.reason} ${v?.message.split(":")[0]}`;
    };
    expect(repos.map(how)).toEqual([
      "ok",
      "rate_limited aborted",
      "rate_limited aborted",
      "rate_limited manifest HEAD for p/app-3",
      "rate_limited aborted",
      ...Array(7).fill("rate_limited not requested"),
    ]);
    expect(got.retryAfter?.delayMs).toBe(600_000);
  });
});
