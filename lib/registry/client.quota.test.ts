// The registry's quota, with a fake fetch that answers each HEAD only when the test says so:
// the first HEAD goes alone, a 429 aborts the HEADs in flight and sends no more, and a
// Retry-After comes back parsed; an earlier Retry-After still running sends nothing at all.
import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../log.ts";
import { noopTelemetry } from "../telemetry.ts";
import { type DigestResult, type ResolveOptions, resolveDigests } from "./client.ts";

const DIGEST = `sha256:${"a".repeat(64)}`;

interface Call {
  method: string;
  path: string;
  signal: AbortSignal;
  answer(res: Response): void;
}

/** A fetch whose /v2/ probe is open and whose HEADs wait for `answer`, or for their abort. */
function fakeRegistry() {
  const calls: Call[] = [];
  const waiters: Array<() => void> = [];
  const fakeFetch = ((input: URL | string, init: RequestInit = {}) => {
    const url = new URL(String(input));
    if (url.pathname === "/v2/") return Promise.resolve(new Response("{}", { status: 200 }));
    return new Promise<Response>((resolve, reject) => {
      const signal = init.signal as AbortSignal;
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      calls.push({ method: String(init.method), path: url.pathname, signal, answer: resolve });
      for (const w of waiters.splice(0)) w();
    });
  }) as typeof globalThis.fetch;
  /** Resolves once `n` HEADs have been sent (bounded: a test that waits longer fails). */
  const sent = async (n: number) => {
    for (let i = 0; i < 200 && calls.length < n; i++)
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 10);
      });
    return calls.length;
  };
  return { calls, fetch: fakeFetch, sent };
}

const ok = () => new Response(null, { status: 200, headers: { "Docker-Content-Digest": DIGEST } });
const limited = (headers: Record<string, string>) => new Response(null, { status: 429, headers });

function options(fetch: typeof globalThis.fetch, extra: Partial<ResolveOptions> = {}) {
  const log = memoryLogger();
  const opts: ResolveOptions = {
    host: "registry.test",
    requestTimeoutMs: 5000,
    signal: new AbortController().signal,
    telemetry: noopTelemetry(),
    log,
    fetch,
    concurrency: 3,
    ...extra,
  };
  return { opts, log };
}

const repos = (n: number) => Array.from({ length: n }, (_, i) => `team/app-${i}`);
const summary = (m: Map<string, DigestResult>) =>
  [...m.values()].map((r) => (r.ok ? "ok" : `${r.reason}: ${r.message.split(":")[0]}`));

describe("the first HEAD goes alone", () => {
  test("no other HEAD is sent until the first has its answer; then three at a time", async () => {
    const f = fakeRegistry();
    const done = resolveDigests(repos(7), "v1", options(f.fetch).opts);
    expect(await f.sent(1)).toBe(1);
    await Bun.sleep(30); // had the others been started with it, they would be here by now
    expect(f.calls.length).toBe(1);
    f.calls[0]?.answer(ok());
    expect(await f.sent(4)).toBe(4);
    await Bun.sleep(30);
    expect(f.calls.length).toBe(4); // the concurrency bound holds
    for (let i = 1; i < 7; i++) {
      await f.sent(i + 1);
      f.calls[i]?.answer(ok());
    }
    expect(summary(await done)).toEqual(Array(7).fill("ok"));
  });

  test("a 429 to the first HEAD: nothing else is sent, every image is rate_limited", async () => {
    const f = fakeRegistry();
    const done = resolveDigests(repos(5), "v1", options(f.fetch).opts);
    await f.sent(1);
    f.calls[0]?.answer(limited({ "Retry-After": "60" }));
    const got = await done;
    expect(f.calls.length).toBe(1);
    expect(summary(got)).toEqual([
      "rate_limited: manifest HEAD for team/app-0",
      ...Array(4).fill("rate_limited: not requested"),
    ]);
  });
});

describe("a 429 aborts the HEADs in flight", () => {
  test("the two in flight are aborted, the rest never sent, Retry-After and ratelimit-remaining logged", async () => {
    const f = fakeRegistry();
    const { opts, log } = options(f.fetch);
    const done = resolveDigests(repos(8), "v1", opts);
    await f.sent(1);
    f.calls[0]?.answer(ok());
    await f.sent(4);
    const date = "Tue, 01 Dec 2026 10:00:00 GMT";
    f.calls[2]?.answer(limited({ "Retry-After": "120", Date: date, "RateLimit-Remaining": "0;w=21600" }));
    const got = await done;
    expect(f.calls.length).toBe(4);
    expect([f.calls[1]?.signal.aborted, f.calls[3]?.signal.aborted]).toEqual([true, true]);
    expect(summary(got)).toEqual([
      "ok",
      "rate_limited: aborted",
      "rate_limited: manifest HEAD for team/app-2",
      "rate_limited: aborted",
      ...Array(4).fill("rate_limited: not requested"),
    ]);
    expect(got.retryAfter).toEqual({ at: new Date("2026-12-01T10:02:00Z"), delayMs: 120_000 });
    const note = log.lines.filter((l) => l.msg.includes("rate limiting (429)"));
    expect(note.map((l) => l.fields)).toEqual([
      expect.objectContaining({
        retry_after: "120",
        retry_after_until: "2026-12-01T10:02:00.000Z",
        ratelimit_remaining: "0;w=21600",
      }),
    ]);
  });

  test("the tick's own deadline is still a timeout, not a 429", async () => {
    const f = fakeRegistry();
    const tick = new AbortController();
    const done = resolveDigests(repos(2), "v1", options(f.fetch, { signal: tick.signal }).opts);
    await f.sent(1);
    tick.abort(new Error("deadline"));
    expect((await done).get("team/app-0")).toMatchObject({ ok: false, reason: "timeout" });
  });
});

describe("notBefore: an earlier Retry-After still running", () => {
  test("nothing is sent; every image is rate_limited; one warning names the time", async () => {
    const f = fakeRegistry();
    const probes: string[] = [];
    const fetch = ((u: URL | string, i?: RequestInit) => {
      probes.push(String(u));
      return f.fetch(u, i);
    }) as typeof globalThis.fetch;
    const notBefore = new Date("2026-12-01T11:00:00Z");
    const now = () => Date.parse("2026-12-01T10:30:00Z");
    const { opts, log } = options(fetch, { notBefore, now });
    const got = await resolveDigests(repos(3), "v1", opts);
    expect(probes).toEqual([]);
    expect([...got.values()].map((r) => !r.ok && r.reason)).toEqual(Array(3).fill("rate_limited"));
    expect(log.lines.map((l) => l.msg)).toEqual([
      "registry registry.test is rate limiting; not calling it before 2026-12-01T11:00:00.000Z",
    ]);
    expect(got.retryAfter).toBeUndefined();
  });

  test("once the time has passed, the registry is called as usual", async () => {
    const f = fakeRegistry();
    const notBefore = new Date("2026-12-01T10:00:00Z");
    const now = () => Date.parse("2026-12-01T10:00:01Z");
    const done = resolveDigests(["team/app"], "v1", options(f.fetch, { notBefore, now }).opts);
    await f.sent(1);
    f.calls[0]?.answer(ok());
    expect(summary(await done)).toEqual(["ok"]);
  });
});
