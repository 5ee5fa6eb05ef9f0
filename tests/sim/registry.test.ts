// The simulated registry itself: the behaviour the client is tested against must be the real
// registry's, or the client tests prove nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";

const ALL =
  "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_V2 = "application/vnd.docker.distribution.manifest.v2+json";
const tls = generateTls();
const sha = (b: ArrayBuffer) => `sha256:${createHash("sha256").update(Buffer.from(b)).digest("hex")}`;

const errorCode = async (res: Response) =>
  ((await res.json()) as { errors: Array<{ code: string }> }).errors[0]?.code;

let reg: SimRegistry;
beforeAll(async () => {
  reg = await startRegistry({ tls, auth: "none" });
});
afterAll(() => reg.stop());

function get(path: string, accept: string, method = "GET", headers: Record<string, string> = {}, on = reg) {
  return fetch(`${on.url}${path}`, {
    method,
    headers: { Accept: accept, ...headers },
    tls: { ca: tls.caPem },
  });
}

describe("content negotiation (reference registry rules)", () => {
  test("multi-arch Docker list: full Accept → list digest; no list type by tag → amd64 child", async () => {
    const digest = reg.push("neg/list", "v1", { multiArch: true });
    const head = await get("/v2/neg/list/manifests/v1", ALL, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("docker-content-digest")).toBe(digest);
    expect(head.headers.get("content-type")).toBe(
      "application/vnd.docker.distribution.manifest.list.v2+json",
    );
    const full = await get("/v2/neg/list/manifests/v1", ALL);
    const body = await full.arrayBuffer();
    expect(sha(body)).toBe(digest);
    expect(head.headers.get("content-length")).toBe(String(body.byteLength));
    expect(head.headers.get("etag")).toBe(`"${digest}"`);
    const child = await get("/v2/neg/list/manifests/v1", DOCKER_V2);
    const childBody = await child.arrayBuffer();
    expect(child.headers.get("content-type")).toBe(DOCKER_V2);
    expect(child.headers.get("docker-content-digest")).toBe(sha(childBody));
    expect(sha(childBody)).not.toBe(digest);
    const listed = JSON.parse(Buffer.from(body).toString()).manifests;
    expect(
      listed.find((m: { platform: { architecture: string } }) => m.platform.architecture === "amd64").digest,
    ).toBe(sha(childBody));
    // By digest the list is served as stored, even without the list type accepted.
    const byDigest = await get(`/v2/neg/list/manifests/${digest}`, DOCKER_V2, "HEAD");
    expect(byDigest.headers.get("docker-content-digest")).toBe(digest);
  });

  test("OCI manifest or index not accepted → 404 MANIFEST_UNKNOWN", async () => {
    reg.push("neg/oci", "v1", { oci: true });
    reg.push("neg/ociidx", "v1", { oci: true, multiArch: true });
    for (const repo of ["neg/oci", "neg/ociidx"]) {
      const res = await get(
        `/v2/${repo}/manifests/v1`,
        `${DOCKER_V2}, application/vnd.docker.distribution.manifest.list.v2+json`,
      );
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("MANIFEST_UNKNOWN");
      expect((await get(`/v2/${repo}/manifests/v1`, ALL, "HEAD")).status).toBe(200);
    }
  });

  test("q-values and parameters are ignored; If-None-Match gives 304", async () => {
    const digest = reg.push("neg/q", "v1", { oci: true });
    const res = await get(
      "/v2/neg/q/manifests/v1",
      "application/vnd.oci.image.manifest.v1+json;q=0.1",
      "HEAD",
    );
    expect(res.headers.get("docker-content-digest")).toBe(digest);
    const cached = await get("/v2/neg/q/manifests/v1", ALL, "HEAD", { "If-None-Match": `"${digest}"` });
    expect(cached.status).toBe(304);
    expect(cached.headers.get("docker-content-digest")).toBeNull();
  });

  test("unknown repository and tag are both 404 MANIFEST_UNKNOWN on GET, as distribution answers", async () => {
    reg.push("neg/known", "v1");
    expect(await errorCode(await get("/v2/neg/nothing/manifests/v1", ALL))).toBe("MANIFEST_UNKNOWN");
    expect(await errorCode(await get("/v2/neg/known/manifests/v2", ALL))).toBe("MANIFEST_UNKNOWN");
    const head = await get("/v2/neg/known/manifests/v2", ALL, "HEAD");
    expect(head.status).toBe(404);
    expect(await head.text()).toBe("");
  });
});

describe("rate limit: headers on GET and HEAD, only GET counts", () => {
  test("HEADs leave the quota alone; the third GET is a 429 with Retry-After", async () => {
    const r = await startRegistry({ tls, auth: "none", rateLimit: { limit: 2, windowSeconds: 3600 } });
    try {
      r.push("rl/app", "v1");
      const call = (method: string) => get("/v2/rl/app/manifests/v1", ALL, method, {}, r);
      for (let i = 0; i < 3; i++) {
        expect((await call("HEAD")).headers.get("ratelimit-remaining")).toBe("2;w=3600");
      }
      expect((await call("GET")).headers.get("ratelimit-limit")).toBe("2;w=3600");
      expect((await call("GET")).headers.get("ratelimit-remaining")).toBe("1;w=3600");
      const denied = await call("GET");
      expect(denied.status).toBe(429);
      expect(Number(denied.headers.get("retry-after"))).toBeGreaterThan(3000);
      expect(await errorCode(denied)).toBe("TOOMANYREQUESTS");
      const head = await call("HEAD");
      expect([head.status, head.headers.get("ratelimit-remaining")]).toEqual([200, "0;w=3600"]);
      expect(r.counts()).toEqual({ challenge: 0, token: 0, head: 4, get: 3 });
    } finally {
      await r.stop();
    }
  });
});

describe("auth", () => {
  test("bearer: challenge realm on the simulator, token checks Basic users, scopes granted per repo", async () => {
    const r = await startRegistry({ tls, users: { alice: "pw" }, anonymousPull: false, hubLike: true });
    try {
      r.push("priv/app", "v1");
      const opts = { tls: { ca: tls.caPem } };
      const root = await fetch(`${r.url}/v2/`, opts);
      expect(root.status).toBe(401);
      expect(root.headers.get("www-authenticate")).toBe(
        `Bearer realm="${r.url}/token",service="sim-registry"`,
      );
      const tokenUrl = `${r.url}/token?service=sim-registry&scope=repository:priv/app:pull&scope=repository:nope/x:pull`;
      const basic = (u: string, p: string) => ({
        ...opts,
        headers: { Authorization: `Basic ${btoa(`${u}:${p}`)}` },
      });
      expect((await fetch(tokenUrl, basic("alice", "wrong"))).status).toBe(401);
      const head = async (repo: string, token: string) =>
        fetch(`${r.url}/v2/${repo}/manifests/v1`, {
          ...opts,
          method: "HEAD",
          headers: { Authorization: `Bearer ${token}`, Accept: ALL },
        });
      const anon = (await (await fetch(tokenUrl, opts)).json()) as { token: string };
      const denied = await head("priv/app", anon.token);
      expect(denied.status).toBe(401);
      expect(denied.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
      const granted = (await (await fetch(tokenUrl, basic("alice", "pw"))).json()) as { token: string };
      expect(granted).toMatchObject({ expires_in: 300, access_token: granted.token });
      expect((await head("priv/app", granted.token)).status).toBe(200);
      expect((await head("nope/x", granted.token)).status).toBe(401); // Hub-like: unknown repo is 401
      expect((await head("priv/app", "forged")).headers.get("www-authenticate")).toContain(
        'error="invalid_token"',
      );
      // A token is for the service it was asked for, as a real token server's audience claim.
      const elsewhere = tokenUrl.replace("service=sim-registry", "service=other-registry");
      const foreign = (await (await fetch(elsewhere, basic("alice", "pw"))).json()) as { token: string };
      expect((await head("priv/app", foreign.token)).headers.get("www-authenticate")).toContain(
        'error="invalid_token"',
      );
      const unnamed = tokenUrl.replace("service=sim-registry&", "");
      const noService = (await (await fetch(unnamed, basic("alice", "pw"))).json()) as { token: string };
      expect((await head("priv/app", noService.token)).headers.get("www-authenticate")).toContain(
        'error="invalid_token"',
      );
    } finally {
      await r.stop();
    }
  });

  test("faults: status with Retry-After, 200 without digest, malformed digest, hang until stop", async () => {
    const r = await startRegistry({ auth: "none" });
    r.push("f/app", "v1");
    const url = `${r.url}/v2/f/app/manifests/v1`;
    r.faults.add({
      path: "/v2/f/app/manifests/v1",
      times: 1,
      fault: { type: "status", code: 429, retryAfter: 7 },
    });
    r.faults.add({ path: "/v2/f/app/manifests/v1", times: 1, fault: { type: "status", code: 200 } });
    r.faults.add({ path: "/v2/f/app/manifests/v1", times: 1, fault: { type: "malformed" } });
    const limited = await fetch(url, { method: "HEAD" });
    expect([limited.status, limited.headers.get("retry-after")]).toEqual([429, "7"]);
    expect((await fetch(url, { method: "HEAD" })).headers.get("docker-content-digest")).toBeNull();
    expect(
      (await fetch(url, { method: "HEAD", headers: { Accept: ALL } })).headers.get("docker-content-digest"),
    ).toBe("sha256:not-a-digest");
    r.faults.add({ path: "/v2/f/app/manifests/v1", fault: { type: "hang" } });
    const hung = fetch(url, { method: "HEAD" }).catch((e: Error) => e);
    await Bun.sleep(50);
    await r.stop();
    expect(await hung).toBeInstanceOf(Error);
    expect(r.log.map((e) => e.status)).toEqual([429, 200, 200, 0]);
  });
});
