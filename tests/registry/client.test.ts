// The product's registry client against the simulated registry over real HTTPS sockets: the
// request budget, digests, credentials and spans.
import { describe, expect, test } from "bun:test";
import { resolveDigests } from "../../lib/registry/client.ts";
import type { SimRegistry } from "../../sim/registry.ts";
import { registryHarness } from "./harness.ts";

const { tls, sim, options } = registryHarness(2000);
const PASSWORD = "s3cr3t:with-colon";

describe("request budget", () => {
  test("one challenge, one token request with every scope, one HEAD per repository", async () => {
    const r = await sim();
    const a = r.push("myorg/api", "stable");
    const b = r.push("myorg/agent", "stable", { multiArch: true });
    const c = r.push("myorg/oci", "stable", { oci: true, multiArch: true });
    const { opts, telemetry } = options(r);
    const got = await resolveDigests(["myorg/api", "myorg/agent", "myorg/oci"], "stable", opts);
    expect([...got.entries()]).toEqual([
      ["myorg/api", { ok: true, digest: a }],
      ["myorg/agent", { ok: true, digest: b }],
      ["myorg/oci", { ok: true, digest: c }],
    ]);
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 3, get: 0 });
    expect(r.log.find((e) => e.path === "/token")?.query.scope).toEqual([
      "repository:myorg/api:pull",
      "repository:myorg/agent:pull",
      "repository:myorg/oci:pull",
    ]);
    const accept = r.log.find((e) => e.method === "HEAD")?.headers.accept ?? "";
    for (const t of [
      "oci.image.index.v1",
      "docker.distribution.manifest.list.v2",
      "oci.image.manifest.v1",
      "docker.distribution.manifest.v2",
    ]) {
      expect(accept).toContain(`application/vnd.${t}+json`);
    }
    expect(telemetry.spans.map((s) => [s.name, s.kind, s.attributes["http.response.status_code"]])).toEqual([
      ["GET", "client", 401],
      ["GET", "client", 200],
      ["HEAD", "client", 200],
      ["HEAD", "client", 200],
      ["HEAD", "client", 200],
    ]);
    const head = telemetry.spans[2];
    expect(head?.attributes).toMatchObject({
      "http.request.method": "HEAD",
      "server.address": "127.0.0.1",
      "server.port": Number(r.host.split(":")[1]),
      "url.full": `${r.url}/v2/myorg/api/manifests/stable`,
    });
  });

  test("multi-arch yields the index digest, not the amd64 child a narrow Accept would get", async () => {
    const r = await sim({ auth: "none" });
    const index = r.push("myorg/multi", "stable", { multiArch: true });
    const narrow = await fetch(`${r.url}/v2/myorg/multi/manifests/stable`, {
      method: "HEAD",
      headers: { Accept: "application/vnd.docker.distribution.manifest.v2+json" },
      tls: { ca: tls.caPem },
    });
    const child = narrow.headers.get("docker-content-digest");
    expect(child).not.toBe(index);
    const got = await resolveDigests(["myorg/multi"], "stable", options(r).opts);
    expect(got.get("myorg/multi")).toEqual({ ok: true, digest: index });
  });

  test("50 repositories: still one token request; HEADs bounded by the default concurrency of 8", async () => {
    const r = await sim();
    const repos = Array.from({ length: 50 }, (_, i) => `team/app-${i}`);
    for (const repo of repos) r.push(repo, "stable");
    r.faults.add({ method: "HEAD", path: /manifests/, fault: { type: "delay", ms: 60 } });
    const got = await resolveDigests(repos, "stable", options(r).opts);
    expect([...got.values()].every((v) => v.ok)).toBe(true);
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 50, get: 0 });
    expect(maxOverlap(r)).toBe(8);
  });

  test("a configured concurrency bounds the HEADs in flight", async () => {
    const r = await sim({ auth: "none" });
    const repos = ["a", "b", "c", "d", "e", "f", "g"].map((x) => `c/${x}`);
    for (const repo of repos) r.push(repo, "v1");
    r.faults.add({ method: "HEAD", path: /manifests/, fault: { type: "delay", ms: 60 } });
    await resolveDigests(repos, "v1", options(r, { concurrency: 3 }).opts);
    expect(maxOverlap(r)).toBe(3);
    expect(r.counts()).toEqual({ challenge: 1, token: 0, head: 7, get: 0 });
  });

  test("an anonymous-friendly registry (GET /v2/ is 200) gets no token request", async () => {
    const r = await sim({ auth: "none" });
    r.push("x/y", "v1");
    const got = await resolveDigests(["x/y", "x/y"], "v1", options(r).opts);
    expect(got.size).toBe(1);
    expect(r.counts()).toEqual({ challenge: 1, token: 0, head: 1, get: 0 });
  });
});

describe("a configured token endpoint (registry.token)", () => {
  test("no challenge probe: one token request and one HEAD per repository, the limit's requests", async () => {
    const r = await sim();
    const a = r.push("myorg/api", "stable");
    const b = r.push("myorg/agent", "stable");
    const { opts } = options(r, { token: { realm: `${r.url}/token`, service: "sim-registry" } });
    const got = await resolveDigests(["myorg/api", "myorg/agent"], "stable", opts);
    expect([...got.values()]).toEqual([
      { ok: true, digest: a },
      { ok: true, digest: b },
    ]);
    expect(r.counts()).toEqual({ challenge: 0, token: 1, head: 2, get: 0 });
    expect(r.log[0]?.query).toMatchObject({
      service: "sim-registry",
      scope: ["repository:myorg/api:pull", "repository:myorg/agent:pull"],
    });
  });

  test("a wrong service: the registry refuses the token and the warning names the setting", async () => {
    const r = await sim();
    r.push("myorg/api", "stable");
    const t = options(r, { token: { realm: `${r.url}/token`, service: "another-registry" } });
    const got = await resolveDigests(["myorg/api"], "stable", t.opts);
    expect(got.get("myorg/api")).toMatchObject({ ok: false, reason: "unauthorized" });
    expect(r.counts()).toEqual({ challenge: 0, token: 1, head: 1, get: 0 });
    const message = (got.get("myorg/api") as { message: string }).message;
    expect(message).toContain(`the token came from registry.token (realm ${r.url}/token`);
    expect(message).toContain("remove registry.token to let the registry's challenge choose");
  });

  test("a realm that answers 404: every image is unauthorized, no HEAD is sent", async () => {
    const r = await sim();
    r.push("myorg/api", "stable");
    const t = options(r, { token: { realm: `${r.url}/no-token-here` } });
    const got = await resolveDigests(["myorg/api"], "stable", t.opts);
    expect(got.get("myorg/api")).toMatchObject({ ok: false });
    expect(r.counts()).toMatchObject({ challenge: 0, head: 0 });
    expect((got.get("myorg/api") as { message: string }).message).toContain("registry.token");
  });
});

function maxOverlap(r: SimRegistry): number {
  const heads = r.log.filter((e) => e.method === "HEAD");
  return Math.max(...heads.map((h) => heads.filter((o) => o.start <= h.start && o.end > h.start).length));
}

describe("credentials", () => {
  const creds = { username: "alice", password: PASSWORD };
  const basic = `Basic ${Buffer.from(`alice:${PASSWORD}`).toString("base64")}`;

  function assertNoSecret(t: ReturnType<typeof options>, extra: unknown = "") {
    const seen = JSON.stringify([t.log.lines, t.telemetry.spans, extra]);
    expect(seen).not.toContain(PASSWORD);
    expect(seen).not.toContain(basic.slice(6));
  }

  test("Bearer: Basic credentials reach the token endpoint only", async () => {
    const r = await sim({ users: { alice: PASSWORD }, anonymousPull: false });
    const d = r.push("priv/app", "v1");
    const t = options(r, { credentials: creds });
    const got = await resolveDigests(["priv/app"], "v1", t.opts);
    expect(got.get("priv/app")).toEqual({ ok: true, digest: d });
    expect(r.log.map((e) => [e.path, e.headers.authorization?.split(" ")[0]])).toEqual([
      ["/v2/", undefined],
      ["/token", "Basic"],
      ["/v2/priv/app/manifests/v1", "Bearer"],
    ]);
    expect(r.log[1]?.headers.authorization).toBe(basic);
    assertNoSecret(t, got);
  });

  test("wrong credentials: the token request fails, every image is unauthorized, no HEAD is sent", async () => {
    const r = await sim({ users: { alice: "other" } });
    r.push("priv/app", "v1");
    const t = options(r, { credentials: creds });
    const got = await resolveDigests(["priv/app", "priv/b"], "v1", t.opts);
    expect([...got.values()].map((v) => !v.ok && v.reason)).toEqual(["unauthorized", "unauthorized"]);
    expect(r.counts()).toEqual({ challenge: 1, token: 1, head: 0, get: 0 });
    expect(t.log.lines[0]?.fields).toMatchObject({
      reason: "unauthorized",
      status: 401,
      code: "UNAUTHORIZED",
    });
    assertNoSecret(t, got);
  });

  test("Basic challenge: credentials go straight on the HEADs; without them nothing is sent", async () => {
    const r = await sim({ auth: "basic", users: { alice: PASSWORD } });
    const d = r.push("b/app", "v1");
    const t = options(r, { credentials: creds });
    expect((await resolveDigests(["b/app"], "v1", t.opts)).get("b/app")).toEqual({ ok: true, digest: d });
    expect(r.log.map((e) => e.headers.authorization)).toEqual([undefined, basic]);
    assertNoSecret(t);
    r.clearLog();
    const anon = await resolveDigests(["b/app"], "v1", options(r).opts);
    expect(anon.get("b/app")).toMatchObject({ ok: false, reason: "unauthorized" });
    expect(r.counts()).toEqual({ challenge: 1, token: 0, head: 0, get: 0 });
  });

  test("plain http is refused before any request unless insecure; with insecure it works", async () => {
    const r = await sim({ auth: "basic", users: { alice: PASSWORD } }, true);
    const d = r.push("h/app", "v1");
    const endpoint = r.url;
    const t = options(r, { endpoint, credentials: creds });
    await expect(resolveDigests(["h/app"], "v1", t.opts)).rejects.toThrow(
      /plain http; set registry.insecure: true/,
    );
    expect(r.log).toEqual([]);
    const ok = await resolveDigests(["h/app"], "v1", { ...t.opts, insecure: true });
    expect(ok.get("h/app")).toEqual({ ok: true, digest: d });
  });

  test("an endpoint with credentials in the URL is refused without echoing them", async () => {
    const r = await sim();
    const endpoint = r.url.replace("https://", `https://alice:${encodeURIComponent(PASSWORD)}@`);
    const t = options(r, { endpoint });
    const err = await resolveDigests(["a/b"], "v1", t.opts).catch((e: Error) => e);
    expect(String(err)).toMatch(/contains credentials/);
    expect(String(err)).not.toContain("s3cr3t");
    expect(r.log).toEqual([]);
  });

  test("a redirect to another origin drops the Authorization header", async () => {
    const target = await sim({ auth: "none" });
    const d = target.push("r/app", "v1");
    const front = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: tls.certPem, key: tls.keyPem },
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        if (!req.headers.get("authorization")) {
          return new Response("", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="front"' } });
        }
        return Response.redirect(`${target.url}${path}`, 307);
      },
    });
    try {
      const t = options(target, { host: `127.0.0.1:${front.port}`, credentials: creds });
      const got = await resolveDigests(["r/app"], "v1", t.opts);
      expect(got.get("r/app")).toEqual({ ok: true, digest: d });
      expect(target.log.map((e) => [e.method, e.path, e.headers.authorization])).toEqual([
        ["HEAD", "/v2/r/app/manifests/v1", undefined],
      ]);
      expect(t.telemetry.spans.map((s) => s.attributes["http.response.status_code"])).toEqual([
        401, 307, 200,
      ]);
    } finally {
      front.stop(true);
    }
  });
});
