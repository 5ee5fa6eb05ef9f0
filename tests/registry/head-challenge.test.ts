// A registry whose API root is open (GET /v2/ → 200) but whose repositories are not: the first
// HEAD's 401 challenge is followed once with the configured credentials, by one token request
// carrying every repository's scope whose token the later HEADs reuse.
import { describe, expect, test } from "bun:test";
import { resolveDigests } from "../../lib/registry/client.ts";
import { registryHarness } from "./harness.ts";

const { sim, options } = registryHarness(2000);
const creds = { username: "alice", password: "pw" };
const repos = ["c/a", "c/b", "c/c"];
const summary = (m: Map<string, { ok: boolean; reason?: string }>) =>
  [...m.values()].map((v) => v.ok || v.reason);

describe("a 401 challenge on a HEAD after an open GET /v2/", () => {
  test("Bearer: one token request with every scope; the first HEAD asked again, the rest reuse the token", async () => {
    const r = await sim({ openRoot: true, anonymousPull: false, users: { alice: "pw" } });
    const digests = repos.map((repo) => r.push(repo, "v1"));
    const got = await resolveDigests(repos, "v1", options(r, { credentials: creds, concurrency: 2 }).opts);
    expect([...got.values()]).toEqual(digests.map((digest) => ({ ok: true, digest })));
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 4, get: 0 });
    const token = r.log.find((e) => e.path === "/token");
    expect(token?.query.scope).toEqual(repos.map((x) => `repository:${x}:pull`));
    const heads = r.log.filter((e) => e.method === "HEAD");
    expect(heads[0]?.headers.authorization).toBeUndefined();
    for (const h of heads.slice(1)) expect(h.headers.authorization).toMatch(/^Bearer /);
  });

  test("Basic: the credentials are sent from the second HEAD on", async () => {
    const r = await sim({ openRoot: true, auth: "basic", users: { alice: "pw" } });
    for (const repo of repos) r.push(repo, "v1");
    const got = await resolveDigests(repos, "v1", options(r, { credentials: creds }).opts);
    expect(summary(got)).toEqual([true, true, true]);
    expect(r.counts()).toEqual({ challenge: 1, token: 0, head: 4, get: 0 });
  });

  test("followed once only: a second 401 fails that image, and a refused Basic credential says so", async () => {
    const r = await sim({ openRoot: true, auth: "basic", users: { alice: "other" } });
    for (const repo of repos) r.push(repo, "v1");
    const t = options(r, { credentials: creds });
    const got = await resolveDigests(repos, "v1", t.opts);
    expect(summary(got)).toEqual(["unauthorized", "unauthorized", "unauthorized"]);
    expect(r.counts().head).toBe(4);
    for (const v of got.values())
      expect(v.ok ? "" : v.message).toContain("refused the dockerconfigjson credential");
  });

  test("a token endpoint that refuses the credential says so; no HEAD after the first", async () => {
    const r = await sim({ openRoot: true, anonymousPull: false, users: { alice: "other" } });
    for (const repo of repos) r.push(repo, "v1");
    const got = await resolveDigests(repos, "v1", options(r, { credentials: creds }).opts);
    expect(summary(got)).toEqual(["unauthorized", "unauthorized", "unauthorized"]);
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 1, get: 0 });
    for (const v of got.values())
      expect(v.ok ? "" : v.message).toBe(
        "the token endpoint answered 401 UNAUTHORIZED: incorrect username or password: it refused the dockerconfigjson credential",
      );
  });
});
