// Only signed builds roll out, end to end: the compiled binary against the simulated cluster and
// registry, builds signed in the test with WebCrypto in both of cosign's formats (the simulated
// registry, like the reference one, has no referrers API: bundles are found under the tag
// fallback). Refused builds hold the image, count nothing and announce themselves once; a no-op
// tick fetches no signature.
import { beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { putBundle, putSimpleSignature, type Signer, signer, simplePayload } from "../support/signing.ts";
import { SimSink } from "../support/sim-sink.ts";
import { recorded, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

let w: World;
let ours: Signer;
let theirs: Signer;
beforeAll(async () => {
  [ours, theirs] = await Promise.all([signer(), signer()]);
});
worldPerTest((world) => {
  w = world;
});

/** api verified with release.pub; node-agent not. */
function withPolicy(): string {
  const path = join(w.dir, "release.pub");
  writeFileSync(path, ours.pem);
  w.writeConfig((c) => (c.images[0].verify = { keys: [path] }));
  return path;
}

const sink = () => new SimSink(w.registry, "myorg/api");
const signatureRequests = () =>
  w.registry.log.filter((e) => /\/(blobs|referrers)\/|\/manifests\/sha256-/.test(e.path)).length;
const refusals = () => w.api.events.filter((e) => e.reason === "BuildRefused");

describe("a verify policy", () => {
  test("an unsigned build is held, counted nowhere, announced once; signed, it rolls out and is remembered", async () => {
    withPolicy();
    await recorded(w);
    const before = w.image("Deployment", "apps", "api", "api");
    const digest = w.registry.push("myorg/api", "stable");

    const held = await w.run();
    expect(held.code).toBe(1);
    expect(held.stderr).toMatch(/held: .*api: held/);
    expect(held.stderr).toContain(`new build ${digest} of myorg/api is refused, it is not signed`);
    expect(w.image("Deployment", "apps", "api", "api")).toBe(before);
    expect(w.book()["refresh-attempt-api"]).toBeUndefined();
    expect(w.book()["refused-api-signature"]).toBe(digest);
    expect(refusals().length).toBe(2); // one per workload of api: Deployments api and api-proxy

    const again = await w.run();
    expect(again.code).toBe(1);
    expect(refusals().length).toBe(2);

    await putSimpleSignature(sink(), digest, ours);
    const rolled = await w.run();
    expect(rolled.code).toBe(0);
    expect(rolled.stderr).toContain("refreshed");
    expect(w.image("Deployment", "apps", "api", "api")).toBe(`${w.registry.host}/myorg/api@${digest}`);
    expect(w.book()["verified-api-signature"]).toBe(digest);
    expect(w.book()["refused-api-signature"]).toBeUndefined();

    // The build is verified: later ticks fetch no signature, and a no-op tick makes the requests it always made.
    w.registry.clearLog();
    const noop = await w.run();
    expect(noop.code).toBe(0);
    expect(noop.stderr).toContain("noop:");
    expect(signatureRequests()).toBe(0);
    expect(w.registry.counts()).toMatchObject({ token: 1, head: 2, get: 0 });
  });

  test("another key, another digest: signature_invalid, nothing counted; a bundle-signed build then rolls out", async () => {
    withPolicy();
    await recorded(w);
    const first = w.registry.push("myorg/api", "stable");
    await putSimpleSignature(sink(), first, theirs);
    const other = await w.run();
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("none of the configured keys");
    expect(w.book()["refresh-attempt-api"]).toBeUndefined();

    const second = w.registry.push("myorg/api", "stable");
    // A good signature of the first build copied under the second's tag.
    await putSimpleSignature(sink(), second, ours, { payload: simplePayload(first) });
    const copied = await w.run();
    expect(copied.code).toBe(1);
    expect(copied.stderr).toContain(`signed for another digest (${first})`);
    expect(w.book()["refused-api-signature"]).toBe(second);
    expect(refusals().map((e) => e.note.includes(second))).toEqual([false, false, true, true]);

    const third = w.registry.push("myorg/api", "stable");
    await putBundle(sink(), third, ours, { fallback: true });
    const rolled = await w.run();
    expect(rolled.code).toBe(0);
    expect(w.image("Deployment", "apps", "api", "api")).toBe(`${w.registry.host}/myorg/api@${third}`);
    expect(w.book()["verified-api-signature"]).toBe(third);
  });

  test("status names the policy and whether the registry's build verifies", async () => {
    withPolicy();
    await recorded(w);
    const digest = w.registry.push("myorg/api", "stable");
    const unsigned = await w.run(["status", "api"]);
    expect(unsigned.stdout).toContain(
      `signature policy: signed by ${join(w.dir, "release.pub")} (image verify)`,
    );
    expect(unsigned.stdout).toContain("registry's build signature: unsigned");
    expect(unsigned.code).toBe(1);
    await putSimpleSignature(sink(), digest, ours);
    const signed = await w.run(["status", "api"]);
    expect(signed.stdout).toContain("registry's build signature: verified");
    expect(signed.code).toBe(0);
  });

  test("a key file that is not a public key is a configuration error naming it; no request is made", async () => {
    const path = join(w.dir, "bad.pub");
    writeFileSync(path, "not a key");
    w.writeConfig((c) => (c.verify = { keys: [path] }));
    w.registry.clearLog();
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`verify.keys[0]: ${path} holds no PEM "PUBLIC KEY" block`);
    expect(w.registry.log.length).toBe(0);
  });
});
