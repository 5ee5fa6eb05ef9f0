// The registry client against the real thing: Debian's docker-registry (distribution), images
// pushed by skopeo, digests computed by `skopeo inspect --raw | sha256sum`, and the compiled
// binary (against the simulated API server) resolving them over plain HTTP, TLS, Basic and
// Bearer tokens signed by our own issuer. Where the simulator answers otherwise, it is wrong.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateTls } from "../../sim/tls.ts";
import { needTools } from "../support/tools.ts";
import { buildImage, type Kind } from "./real/images.ts";
import { startRecordingProxy } from "./real/proxy.ts";
import { type RealRegistry, startRealRegistry } from "./real/registry.ts";
import { type Access, push, rawDigest, rawMediaType } from "./real/skopeo.ts";
import { startTokenIssuer } from "./real/token-issuer.ts";
import { type RealImage, type RealWorld, startRealWorld, TAG } from "./real/world.ts";

const missing = needTools([
  { tool: "docker-registry", apt: "docker-registry" },
  { tool: "skopeo", apt: "skopeo" },
  { tool: "openssl", apt: "openssl" },
  { tool: "sha256sum", apt: "coreutils" },
]);

const KINDS: Array<{ key: string; kind: Kind; repository: string; mediaType: string }> = [
  {
    key: "oci",
    kind: "oci",
    repository: "myorg/oci",
    mediaType: "application/vnd.oci.image.manifest.v1+json",
  },
  {
    key: "index",
    kind: "oci-index",
    repository: "myorg/index",
    mediaType: "application/vnd.oci.image.index.v1+json",
  },
  {
    key: "docker",
    kind: "docker",
    repository: "myorg/docker",
    mediaType: "application/vnd.docker.distribution.manifest.v2+json",
  },
  {
    key: "list",
    kind: "docker-list",
    repository: "myorg/list",
    mediaType: "application/vnd.docker.distribution.manifest.list.v2+json",
  },
  {
    key: "deep",
    kind: "oci-index",
    repository: "team/sub/app",
    mediaType: "application/vnd.oci.image.index.v1+json",
  },
];
const CREDS = { user: "puller", password: "s3cret-registry-password" };

/** Pushes every kind to `reg` and returns the digest skopeo and sha256sum give each. */
async function pushAll(reg: RealRegistry, access: Access, marker: string): Promise<Map<string, string>> {
  const want = new Map<string, string>();
  for (const k of KINDS) {
    const ref = `${reg.host}/${k.repository}:${TAG}`;
    await push(buildImage(k.kind, `${marker} ${k.key}`), ref, access);
    want.set(k.key, await rawDigest(ref, access));
  }
  return want;
}

const images: RealImage[] = KINDS.map((k) => ({ key: k.key, repository: k.repository }));
const recordedAll = (w: RealWorld) => new Map(KINDS.map((k) => [k.key, w.recorded(k.key)]));

describe.skipIf(missing)("plain HTTP: every manifest type", () => {
  let reg: RealRegistry;
  let want: Map<string, string>;
  let w: RealWorld;
  beforeAll(async () => {
    reg = await startRealRegistry();
    want = await pushAll(reg, {}, "first");
    w = await startRealWorld(images, { host: reg.host, endpoint: reg.endpoint });
  }, 120_000);
  afterAll(async () => {
    await w?.stop();
    await reg?.stop();
  });

  test("each kind really is the media type it claims (read back by skopeo)", async () => {
    for (const k of KINDS)
      expect([k.key, await rawMediaType(`${reg.host}/${k.repository}:${TAG}`)]).toEqual([k.key, k.mediaType]);
  });

  test("first observation records, for every kind, the digest of skopeo inspect --raw | sha256sum", async () => {
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(recordedAll(w)).toEqual(want);
  }, 60_000);

  test("a re-pushed tag: the next tick pins every workload to the new digest", async () => {
    const next = await pushAll(reg, {}, "second");
    for (const k of KINDS) expect(next.get(k.key)).not.toBe(want.get(k.key));
    const r = await w.run();
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(recordedAll(w)).toEqual(next);
    for (const k of KINDS) expect(w.image(k.key)).toBe(`${reg.host}/${k.repository}@${next.get(k.key)}`);
  }, 60_000);
});

describe.skipIf(missing)("unknown tag, unknown repository, a registry killed mid-tick", () => {
  let reg: RealRegistry;
  let w: RealWorld;
  let known: string;
  beforeAll(async () => {
    reg = await startRealRegistry();
    const ref = `${reg.host}/myorg/known:${TAG}`;
    await push(buildImage("oci", "known"), ref);
    known = await rawDigest(ref);
    await push(buildImage("oci", "other tag"), `${reg.host}/myorg/tagless:other`);
    const three = [
      { key: "known", repository: "myorg/known" },
      { key: "tagless", repository: "myorg/tagless" },
      { key: "absent", repository: "myorg/absent" },
    ];
    w = await startRealWorld(three, { host: reg.host, endpoint: reg.endpoint });
  }, 120_000);
  afterAll(async () => {
    await w?.stop();
    await reg?.stop();
  });

  test("an unknown tag and an unknown repository are unresolved, warned by name; the known one is recorded", async () => {
    const r = await w.run();
    expect(w.recorded("known")).toBe(known);
    expect([w.recorded("tagless"), w.recorded("absent")]).toEqual([undefined, undefined]);
    for (const repo of ["myorg/tagless", "myorg/absent"]) {
      const lines = r.stderr.split("\n").filter((l) => l.includes(`${repo}:${TAG}`) && /WARN/i.test(l));
      expect([repo, lines.length > 0, lines.join("\n")]).toEqual([
        repo,
        true,
        expect.stringMatching(/404|not found|MANIFEST_UNKNOWN/i),
      ]);
    }
  }, 60_000);

  test("killed after the tick started and before its HEADs: unresolved, only the streaks counted; back again, it resolves", async () => {
    // The store's entries, prefixed as the streak keys below name them.
    const book = (): Record<string, string> =>
      Object.fromEntries(
        Object.entries(w.api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {}).map(
          ([k, v]) => [`image-refresh.io/${k}`, String(v)],
        ),
      );
    const before = book();
    // Hold the store's read (the registry is asked only once the store answered, for its stored
    // Retry-After), and kill the registry while it waits.
    w.api.faults.add({
      method: "GET",
      path: /configmaps\/image-refresh-state$/,
      times: 1,
      fault: { type: "delay", ms: 1500 },
    });
    const running = w.run();
    await Bun.sleep(400);
    const port = reg.port;
    const dataDir = reg.dataDir;
    await reg.kill();
    const r = await running;
    expect(r.stderr).toMatch(/myorg\/known:stable.*(connect|refused|network|unreachable)/i);
    // Every image is unresolved: its streak goes up by one (an image gone blind is never a quiet
    // noop), and nothing else is written.
    const streak = (a: Record<string, string>, key: string) =>
      Number(a[`image-refresh.io/unresolved-streak-${key}`] ?? 0);
    const after = book();
    const keys = new Set(
      Object.keys(after).flatMap(
        (x) =>
          /(?:last-refreshed-(.+)-digest|unresolved-streak-(.+))$/.exec(x)?.slice(1).filter(Boolean) ?? [],
      ),
    );
    expect(keys.size).toBeGreaterThan(1);
    for (const key of keys) expect(streak(after, key)).toBe(streak(before, key) + 1);
    expect(
      Object.fromEntries(Object.entries(after).filter(([x]) => !x.includes("unresolved-streak-"))),
    ).toEqual(Object.fromEntries(Object.entries(before).filter(([x]) => !x.includes("unresolved-streak-"))));
    expect(w.recorded("known")).toBe(known);
    reg = await startRealRegistry({ port, dataDir });
    const again = await w.run();
    expect(again.stderr).not.toMatch(/myorg\/known:stable.*(connect|refused|network)/i);
    expect(w.recorded("known")).toBe(known);
    expect(book()["image-refresh.io/unresolved-streak-known"]).toBeUndefined();
  }, 60_000);
});

describe.skipIf(missing)("TLS with a CA made for the run", () => {
  const tls = generateTls();
  let reg: RealRegistry;
  let want: Map<string, string>;
  beforeAll(async () => {
    reg = await startRealRegistry({ tls });
    want = await pushAll(reg, { caPem: tls.caPem }, "tls");
  }, 120_000);
  afterAll(async () => reg?.stop());

  test("trusted through NODE_EXTRA_CA_CERTS: every digest resolves", async () => {
    const w = await startRealWorld(images, { host: reg.host, endpoint: reg.endpoint, trustPem: tls.caPem });
    try {
      const r = await w.run();
      expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(recordedAll(w)).toEqual(want);
    } finally {
      await w.stop();
    }
  }, 60_000);

  test("a certificate from a CA the binary does not trust is refused: nothing recorded", async () => {
    const w = await startRealWorld(images, { host: reg.host, endpoint: reg.endpoint });
    try {
      const r = await w.run();
      expect(r.stderr).toMatch(/certificate|tls|self.signed|verify/i);
      expect([...recordedAll(w).values()].filter(Boolean)).toEqual([]);
    } finally {
      await w.stop();
    }
  }, 60_000);
});

describe.skipIf(missing)("Basic through an htpasswd file", () => {
  let reg: RealRegistry;
  let want: Map<string, string>;
  beforeAll(async () => {
    reg = await startRealRegistry({ auth: { type: "basic", ...CREDS } });
    want = await pushAll(reg, { creds: CREDS }, "basic");
  }, 120_000);
  afterAll(async () => reg?.stop());

  test("the dockerconfigjson credential for this host resolves every digest", async () => {
    const w = await startRealWorld(images, { host: reg.host, endpoint: reg.endpoint, creds: CREDS });
    try {
      const r = await w.run();
      expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(recordedAll(w)).toEqual(want);
    } finally {
      await w.stop();
    }
  }, 60_000);

  test("the API root's Basic challenge is kept: the next tick sends its HEADs with the credential, no probe", async () => {
    const proxy = startRecordingProxy(reg.endpoint);
    const w = await startRealWorld(images, { host: reg.host, endpoint: proxy.endpoint, creds: CREDS });
    try {
      expect((await w.run()).code).toBe(0);
      expect(proxy.requests[0]).toMatchObject({ method: "GET", path: "/v2/" });
      const kept = w.api.getConfigMap("image-refresh", "image-refresh-state")?.data?.[
        `registry-challenge-${reg.host.replace(":", "_")}`
      ];
      expect(kept).toMatch(new RegExp(`^${proxy.endpoint} Basic realm=`));
      proxy.requests.length = 0;
      const next = await w.run();
      expect({ code: next.code, stderr: next.code === 0 ? "" : next.stderr }).toEqual({
        code: 0,
        stderr: "",
      });
      expect(proxy.requests.map((q) => q.method)).toEqual(KINDS.map(() => "HEAD"));
      for (const q of proxy.requests)
        expect(q.authorization).toBe(`Basic ${btoa(`${CREDS.user}:${CREDS.password}`)}`);
      expect(recordedAll(w)).toEqual(want);
    } finally {
      await w.stop();
      proxy.stop();
    }
  }, 60_000);

  test("a wrong password: the registry's 401 is named as the refused dockerconfigjson credential", async () => {
    const wrong = { user: CREDS.user, password: "wrong-password" };
    const w = await startRealWorld(images, { host: reg.host, endpoint: reg.endpoint, creds: wrong });
    try {
      const r = await w.run();
      const warned = r.stderr
        .split("\n")
        .filter((l) => l.includes("refused the dockerconfigjson credential"));
      expect(warned.length).toBeGreaterThanOrEqual(KINDS.length);
      expect([...recordedAll(w).values()].filter(Boolean)).toEqual([]);
    } finally {
      await w.stop();
    }
  }, 60_000);

  test("a credential filed under another host is not sent: 401, nothing recorded", async () => {
    const proxy = startRecordingProxy(reg.endpoint);
    const w = await startRealWorld(images, {
      host: reg.host,
      endpoint: proxy.endpoint,
      creds: CREDS,
      credentialsHost: "registry.example.com",
    });
    try {
      const r = await w.run();
      expect(r.stderr).toMatch(/401|unauthorized/i);
      expect([...recordedAll(w).values()].filter(Boolean)).toEqual([]);
      expect(proxy.requests.length).toBeGreaterThan(0);
      expect(proxy.requests.filter((q) => q.authorization !== undefined)).toEqual([]);
    } finally {
      await w.stop();
      proxy.stop();
    }
  }, 60_000);
});

describe.skipIf(missing)("Bearer tokens from an RS256 issuer the registry verifies", () => {
  // Started in beforeAll: Bun runs a skipped describe's body too, and the issuer needs openssl.
  let issuer: ReturnType<typeof startTokenIssuer>;
  let reg: RealRegistry;
  let want: Map<string, string>;
  beforeAll(async () => {
    issuer = startTokenIssuer({ basic: CREDS });
    const { realm, service, certPem } = issuer;
    reg = await startRealRegistry({
      auth: { type: "token", realm, service, issuer: issuer.issuer, certPem },
    });
    want = await pushAll(reg, { creds: CREDS }, "token");
  }, 120_000);
  afterAll(async () => {
    await reg?.stop();
    issuer.stop();
  });

  test("one token request with every scope; the password goes to the issuer, only the token to the registry", async () => {
    const proxy = startRecordingProxy(reg.endpoint);
    const w = await startRealWorld(images, { host: reg.host, endpoint: proxy.endpoint, creds: CREDS });
    issuer.requests.length = 0;
    try {
      const r = await w.run();
      expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(recordedAll(w)).toEqual(want);
      const basic = `Basic ${btoa(`${CREDS.user}:${CREDS.password}`)}`;
      expect(issuer.requests.map((q) => q.authorization)).toEqual([basic]);
      expect(new Set(issuer.requests[0]?.scopes)).toEqual(
        new Set(KINDS.map((k) => `repository:${k.repository}:pull`)),
      );
      const heads = proxy.requests.filter((q) => q.method === "HEAD");
      expect(heads.length).toBe(KINDS.length);
      for (const q of proxy.requests) {
        expect(q.authorization ?? "").not.toContain(CREDS.password);
        expect(q.authorization ?? "").not.toMatch(/^Basic/);
      }
      for (const q of heads) expect(q.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    } finally {
      await w.stop();
      proxy.stop();
    }
  }, 60_000);

  test("a wrong password is refused by the issuer: nothing recorded, no HEAD carries it", async () => {
    const proxy = startRecordingProxy(reg.endpoint);
    const wrong = { user: CREDS.user, password: "wrong-password" };
    const w = await startRealWorld(images, { host: reg.host, endpoint: proxy.endpoint, creds: wrong });
    try {
      const r = await w.run();
      expect(r.stderr).toContain("the token endpoint answered 401");
      expect(r.stderr).toContain("refused the dockerconfigjson credential");
      expect([...recordedAll(w).values()].filter(Boolean)).toEqual([]);
      for (const q of proxy.requests) expect(q.authorization ?? "").not.toContain("wrong-password");
    } finally {
      await w.stop();
      proxy.stop();
    }
  }, 60_000);
});
