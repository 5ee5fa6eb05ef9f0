// A verify policy on an image of a second registry: its build's signature is looked up where the
// build is, on the image's own registry (with that registry's token), never on the top-level one.
// The compiled binary against two simulated registries, the build signed in the test.
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { putSimpleSignature, type Signer, signer } from "../support/signing.ts";
import { SimSink } from "../support/sim-sink.ts";
import { startWorld, type World } from "../support/world.ts";

let w: World;
let b: SimRegistry;
let env: Record<string, string>;
let ours: Signer;

const signatureLookups = (r: SimRegistry) =>
  r.log.filter((e) => /\/(blobs|referrers)\/|\/manifests\/sha256-/.test(e.path)).length;

beforeAll(async () => {
  ours = await signer();
});

beforeEach(async () => {
  w = await startWorld();
  const tls = generateTls();
  b = await startRegistry({ tls });
  const both = join(w.dir, "both-ca.pem");
  writeFileSync(both, `${readFileSync(w.caPath, "utf8")}\n${tls.caPem}`);
  env = { NODE_EXTRA_CA_CERTS: both };
  const key = join(w.dir, "release.pub");
  writeFileSync(key, ours.pem);
  const agent = b.push("myorg/agent", "v2");
  w.api.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "agent-b",
    containers: [{ name: "agent", image: `${b.host}/myorg/agent@${agent}` }],
  });
  w.writeConfig((c) => {
    c.images.push({
      repository: "myorg/agent",
      key: "agent-b",
      tag: "v2",
      registry: { host: b.host },
      verify: { keys: [key] },
      targets: [{ kind: "DaemonSet", namespace: "agents", name: "agent-b", container: "agent" }],
    });
  });
  const first = await w.run([], env);
  if (first.code !== 0) throw new Error(`first tick: exit ${first.code}\n${first.stderr}`);
  w.registry.clearLog();
  b.clearLog();
});

afterEach(async () => {
  await b.stop();
  await w.stop();
});

describe("a verify policy on an image of its own registry", () => {
  test("its build's signature is looked up on that registry: unsigned held, signed there rolled out", async () => {
    const digest = b.push("myorg/agent", "v2");
    const held = await w.run([], env);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain(`new build ${digest} of myorg/agent is refused, it is not signed`);
    expect(signatureLookups(b)).toBeGreaterThan(0);
    expect(signatureLookups(w.registry)).toBe(0);

    // Signed on the image's own registry only: the top-level registry has no such repository.
    await putSimpleSignature(new SimSink(b, "myorg/agent"), digest, ours);
    const rolled = await w.run([], env);
    expect(rolled.code).toBe(0);
    expect(rolled.stderr).toContain("agent-b: refreshed");
    expect(w.image("DaemonSet", "agents", "agent-b", "agent")).toBe(`${b.host}/myorg/agent@${digest}`);
    expect(w.book()["verified-agent-b-signature"]).toBe(digest);
    expect(signatureLookups(w.registry)).toBe(0);
  });
});
