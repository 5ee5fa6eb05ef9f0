// Only signed builds roll out, with a real signer on the reference registry: Debian's
// docker-registry (distribution: no referrers API), images pushed by skopeo, signed by cosign
// built from its Go module in both of its formats (the `.sig` tag's simple signing, and the
// sigstore bundle under the referrers tag fallback); the compiled binary against the simulated API
// server, its registry requests seen by a recording proxy. `cosign verify --key` agrees with every
// verdict. (Debian's skopeo cannot sign with sigstore: its build answers "Debian-local change:
// sigstore disabled".)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildImage } from "../registry/real/images.ts";
import { type RecordingProxy, startRecordingProxy } from "../registry/real/proxy.ts";
import { type RealRegistry, startRealRegistry } from "../registry/real/registry.ts";
import { push, rawDigest } from "../registry/real/skopeo.ts";
import { type RealWorld, startRealWorld, TAG } from "../registry/real/world.ts";
import { needTools } from "../support/tools.ts";
import { needPeers } from "./peers.ts";
import {
  bundleFlags,
  cosignSign,
  cosignVerifies,
  type KeyPair,
  keyPair,
  LEGACY,
  skopeoCopyTag,
} from "./signers.ts";

const missing =
  needTools([
    { tool: "docker-registry", apt: "docker-registry" },
    { tool: "skopeo", apt: "skopeo" },
  ]) || needPeers(["cosign"], "tests/real/signatures.real.test.ts");

const REPO = "myorg/app";

describe.skipIf(missing)("signatures on the reference registry", () => {
  let reg: RealRegistry;
  let proxy: RecordingProxy;
  let w: RealWorld;
  let ours: KeyPair;
  let theirs: KeyPair;
  let n = 0;
  const ref = (r = TAG) => `${reg.host}/${REPO}${r.startsWith("sha256:") ? "@" : ":"}${r}`;
  const book = () => w.api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {};
  const signatureRequests = () =>
    proxy.requests.filter((r) => /\/blobs\/|\/referrers\/|\/manifests\/sha256-/.test(r.path)).length;
  /** Pushes a new build (unsigned, or signed by cosign's `.sig` format with `key`) and returns its digest. */
  const pushBuild = async (key?: KeyPair) => {
    await push(buildImage("oci", `build ${++n}`), ref());
    const digest = await rawDigest(ref());
    if (key) await cosignSign(ref(digest), key, LEGACY);
    return digest;
  };

  beforeAll(async () => {
    reg = await startRealRegistry();
    proxy = startRecordingProxy(reg.endpoint);
    [ours, theirs] = await Promise.all([keyPair(), keyPair()]);
    const first = await pushBuild(ours);
    expect(await cosignVerifies(ref(first), ours)).toBe(true);
    w = await startRealWorld([{ key: "app", repository: REPO }], {
      host: reg.host,
      endpoint: proxy.endpoint,
      verify: { keys: [ours.publicKey] },
    });
  }, 300_000);
  afterAll(async () => {
    await w?.stop();
    proxy?.stop();
    await reg?.stop();
  });

  test("a cosign-signed build (.sig tag) is adopted: the re-pin waits for its signature, which verifies", async () => {
    const first = await rawDigest(ref());
    expect((await w.run()).code).toBe(0); // first observation
    const adopted = await w.run();
    expect(adopted.stderr).toContain("refreshed");
    expect(adopted.code).toBe(0);
    expect(w.image("app")).toBe(ref(first));
    expect(book()["verified-app-signature"]).toBe(first);
  }, 120_000);

  test("a no-op tick fetches no signature", async () => {
    proxy.requests.length = 0;
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("noop:");
    expect(signatureRequests()).toBe(0);
  }, 60_000);

  test("an unsigned push, one signed by another key and a signature copied from another digest are each held, nothing counted", async () => {
    const before = w.image("app");
    const unsigned = await pushBuild();
    const r1 = await w.run();
    expect(r1.code).toBe(1);
    expect(r1.stderr).toContain(`new build ${unsigned} of ${REPO} is refused, it is not signed`);
    expect(await cosignVerifies(ref(unsigned), ours)).toBe(false);

    const other = await pushBuild(theirs);
    const r2 = await w.run();
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain(`new build ${other} of ${REPO} is refused, its signature does not verify`);
    expect(r2.stderr).toContain("none of the configured keys");
    expect(await cosignVerifies(ref(other), ours)).toBe(false);

    const copied = await pushBuild();
    // A good signature, by our key, of the adopted build, copied under the new build's tag.
    const adopted = book()["verified-app-signature"] as string;
    await skopeoCopyTag(ref(`${adopted.replace(":", "-")}.sig`), ref(`${copied.replace(":", "-")}.sig`));
    const r3 = await w.run();
    expect(r3.code).toBe(1);
    expect(r3.stderr).toContain(`signed for another digest (${adopted})`);
    expect(await cosignVerifies(ref(copied), ours)).toBe(false);

    expect(w.image("app")).toBe(before);
    expect(book()["refresh-attempt-app"]).toBeUndefined();
    expect(book()["refused-app-signature"]).toBe(copied);
    const refused = w.api.events.filter((e) => e.reason === "BuildRefused");
    expect(refused.length).toBe(3);
  }, 300_000);

  test("the next build, signed by cosign as a sigstore bundle, rolls out; then a no-op tick fetches nothing", async () => {
    const next = await pushBuild();
    const out = await cosignSign(ref(next), ours, await bundleFlags());
    expect(await cosignVerifies(ref(next), ours)).toBe(true);
    proxy.requests.length = 0;
    const r = await w.run();
    // Found as a bundle: the registry has no referrers API, the index is under the fallback tag.
    const paths = proxy.requests.map((q) => q.path);
    expect(paths).toContain(`/v2/${REPO}/referrers/${next}`);
    expect(paths).toContain(`/v2/${REPO}/manifests/${next.replace(":", "-")}`);
    expect({ code: r.code, out: r.code === 0 ? "" : `${out}\n${r.stderr}` }).toEqual({ code: 0, out: "" });
    expect(w.image("app")).toBe(ref(next));
    expect(book()["verified-app-signature"]).toBe(next);
    proxy.requests.length = 0;
    const noop = await w.run();
    expect(noop.code).toBe(0);
    expect(signatureRequests()).toBe(0);
  }, 300_000);
});
