// The registry's answer to GET /v2/ remembered from one tick to the next, against the simulated
// registry over real HTTPS sockets: a tick that asked hands the answer back to be stored; a tick
// given it sends no probe; an answer that no longer holds is asked again (a realm that moved) or
// overruled by the registry's own challenge (a service that changed) and then forgotten; one that
// points the pull secret at another origin is never followed.
import { describe, expect, test } from "bun:test";
import { resolveDigests } from "../../lib/registry/client.ts";
import type { SimRegistry } from "../../sim/registry.ts";
import { registryHarness } from "./harness.ts";

const { tls, sim, options } = registryHarness(2000);
const REPOS = ["team/api", "team/worker"];
const CREDENTIALS = { username: "robot", password: "pa55-word" };

const sent = (r: SimRegistry) => r.log.map((e) => `${e.method} ${e.path} ${e.status}`);
const challengeOf = (r: SimRegistry) => `Bearer realm="${r.url}/token",service="sim-registry"`;

async function registry(opts: Parameters<typeof sim>[0] = {}) {
  const r = await sim(opts);
  const digests = REPOS.map((repo) => r.push(repo, "stable"));
  return { r, digests };
}

const okAll = (digests: string[]) => digests.map((digest) => ({ ok: true as const, digest }));
const resolve = (r: SimRegistry, extra: Parameters<typeof options>[1] = {}) =>
  resolveDigests(REPOS, "stable", options(r, extra).opts);

/** A first resolve with nothing stored, then one given what it handed back: the second's requests. */
async function twice(r: SimRegistry, stored: string) {
  const first = await resolve(r);
  expect(first.remember).toBe(stored);
  r.clearLog();
  return resolve(r, { storedAnswer: stored });
}

describe("the API root's answer, remembered", () => {
  test("a tick that probed hands it back; the next tick, given it, asks for the token at once", async () => {
    const { r, digests } = await registry();
    const next = await twice(r, `${r.url} ${challengeOf(r)}`);
    expect([...next.values()]).toEqual(okAll(digests));
    expect(sent(r)).toEqual([
      "GET /token 200",
      "HEAD /v2/team/api/manifests/stable 200",
      "HEAD /v2/team/worker/manifests/stable 200",
    ]);
    expect(next.remember).toBeUndefined(); // nothing new to store
  });

  test("an open root: the next tick sends the HEADs alone", async () => {
    const { r, digests } = await registry({ auth: "none" });
    const next = await twice(r, `${r.url} open`);
    expect([...next.values()]).toEqual(okAll(digests));
    expect(sent(r)).toEqual([
      "HEAD /v2/team/api/manifests/stable 200",
      "HEAD /v2/team/worker/manifests/stable 200",
    ]);
  });

  test("an open root whose repositories ask for a token: the HEAD's challenge is followed, the answer kept", async () => {
    const { r, digests } = await registry({ openRoot: true });
    const got = await resolve(r, { storedAnswer: `${r.url} open` });
    expect([...got.values()]).toEqual(okAll(digests));
    expect(sent(r)).toEqual([
      "HEAD /v2/team/api/manifests/stable 401",
      "GET /token 200",
      "HEAD /v2/team/api/manifests/stable 200",
      "HEAD /v2/team/worker/manifests/stable 200",
    ]);
    expect(got.remember).toBeUndefined(); // that is how this registry works: nothing to correct
  });

  test("a realm that moved: its token request fails, the root is asked once, the new answer stored", async () => {
    const { r, digests } = await registry();
    const stored = `${r.url} Bearer realm="${r.url}/old-token",service="sim-registry"`;
    const got = await resolve(r, { storedAnswer: stored });
    expect([...got.values()]).toEqual(okAll(digests));
    expect(sent(r)).toEqual([
      "GET /old-token 404",
      "GET /v2/ 401",
      "GET /token 200",
      "HEAD /v2/team/api/manifests/stable 200",
      "HEAD /v2/team/worker/manifests/stable 200",
    ]);
    expect(got.remember).toBe(`${r.url} ${challengeOf(r)}`);
  });

  test("a service that changed: the first HEAD's challenge is followed once, and the answer forgotten", async () => {
    const { r, digests } = await registry();
    const stored = `${r.url} Bearer realm="${r.url}/token",service="renamed"`;
    const got = await resolve(r, { storedAnswer: stored });
    expect([...got.values()]).toEqual(okAll(digests));
    expect(sent(r)).toEqual([
      "GET /token 200",
      "HEAD /v2/team/api/manifests/stable 401",
      "GET /token 200",
      "HEAD /v2/team/api/manifests/stable 200",
      "HEAD /v2/team/worker/manifests/stable 200",
    ]);
    expect(got.remember).toBeNull(); // the next tick asks the root again
  });

  test("a realm on another origin is never followed: the pull secret goes to the registry's own realm", async () => {
    const elsewhere: string[] = [];
    // Trusted as the registry is (same CA), on another port: only the origin rule keeps it out.
    const other = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: tls.certPem, key: tls.keyPem },
      fetch: (req) => {
        elsewhere.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("authorization")}`);
        return Response.json({ token: "stolen" });
      },
    });
    try {
      const { r, digests } = await registry();
      const stored = `${r.url} Bearer realm="https://127.0.0.1:${other.port}/token",service="sim-registry"`;
      const opts = options(r, { storedAnswer: stored, credentials: CREDENTIALS }).opts;
      const got = await resolveDigests(REPOS, "stable", opts);
      expect([...got.values()]).toEqual(okAll(digests));
      expect(elsewhere).toEqual([]);
      expect(sent(r).slice(0, 2)).toEqual(["GET /v2/ 401", "GET /token 200"]);
      expect(r.log[1]?.headers.authorization).toStartWith("Basic ");
      expect(got.remember).toBe(`${r.url} ${challengeOf(r)}`);
    } finally {
      other.stop(true);
    }
  });

  test("another registry's answer is not replayed here", async () => {
    const { r } = await registry();
    const stored = `https://registry.other.example ${challengeOf(r)}`;
    await resolve(r, { storedAnswer: stored });
    expect(sent(r)[0]).toBe("GET /v2/ 401");
  });

  test("a 429 from the remembered realm stops the registry: no probe follows it", async () => {
    const { r } = await registry();
    r.faults.add({ path: "/token", fault: { type: "status", code: 429, retryAfter: 60 } });
    const got = await resolve(r, { storedAnswer: `${r.url} ${challengeOf(r)}` });
    expect(sent(r)).toEqual(["GET /token 429"]);
    expect([...got.values()].map((x) => (x.ok ? "ok" : x.reason))).toEqual(["rate_limited", "rate_limited"]);
    expect(got.retryAfter?.delayMs).toBe(60_000);
  });

  test("a configured registry.token wins over a remembered answer, which is left as it is", async () => {
    const { r } = await registry();
    const token = { realm: `${r.url}/token`, service: "sim-registry" };
    const stored = `${r.url} open`;
    const got = await resolve(r, { storedAnswer: stored, token });
    expect(sent(r)[0]).toBe("GET /token 200");
    expect(got.remember).toBeUndefined();
  });
});
