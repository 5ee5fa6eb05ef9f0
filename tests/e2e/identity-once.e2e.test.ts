// One identity login per registry host and tick: a tick whose new build is due under a verify
// policy calls the registry twice over (the tag look-up, then the signature look-up), and both use
// the one access token the pod's identity gave. The compiled binary with `auth: gcp` against a
// simulated registry that takes only `oauth2accesstoken:<token>`, and the metadata server
// stand-in of tests/registry/real/clouds.ts (written from Google's published protocol).
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { type StandIn, startGoogle } from "../registry/real/clouds.ts";
import { putSimpleSignature, type Signer, signer } from "../support/signing.ts";
import { SimSink } from "../support/sim-sink.ts";
import { startWorld, type World } from "../support/world.ts";

const TOKEN = `ya29.c.${crypto.randomUUID()}`;
let w: World;
let b: SimRegistry;
let google: StandIn;
let env: Record<string, string>;
let ours: Signer;

const signatureLookups = (r: SimRegistry) =>
  r.log.filter((e) => /\/(blobs|referrers)\/|\/manifests\/sha256-/.test(e.path)).length;
const metadataAsked = () => google.asked.filter((q) => q.path.endsWith("/default/token")).length;

beforeAll(async () => {
  ours = await signer();
});

beforeEach(async () => {
  w = await startWorld();
  const tls = generateTls();
  b = await startRegistry({ tls, auth: "bearer", users: { oauth2accesstoken: TOKEN }, anonymousPull: false });
  google = startGoogle({
    accessToken: TOKEN,
    subjectToken: "unused",
    federatedToken: "unused",
    audience: "unused",
    serviceAccount: "unused",
  });
  const both = join(w.dir, "both-ca.pem");
  writeFileSync(both, `${readFileSync(w.caPath, "utf8")}\n${tls.caPem}`);
  env = { NODE_EXTRA_CA_CERTS: both, GCE_METADATA_HOST: google.host };
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
      registry: { host: b.host, auth: "gcp" },
      verify: { keys: [key] },
      targets: [{ kind: "DaemonSet", namespace: "agents", name: "agent-b", container: "agent" }],
    });
  });
  const first = await w.run([], env);
  if (first.code !== 0) throw new Error(`first tick: exit ${first.code}\n${first.stderr}`);
  b.clearLog();
  google.asked.length = 0;
});

afterEach(async () => {
  google.stop();
  await b.stop();
  await w.stop();
});

describe("auth: gcp with a verify policy", () => {
  test("a new signed build: the tag and signature look-ups share one metadata token; rolled out", async () => {
    const digest = b.push("myorg/agent", "v2");
    await putSimpleSignature(new SimSink(b, "myorg/agent"), digest, ours);
    const r = await w.run([], env);
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(w.image("DaemonSet", "agents", "agent-b", "agent")).toBe(`${b.host}/myorg/agent@${digest}`);
    expect(signatureLookups(b)).toBeGreaterThan(0);
    expect(metadataAsked()).toBe(1);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  test("a no-op tick asks the identity once too, and nothing for the signature", async () => {
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    expect(signatureLookups(b)).toBe(0);
    expect(metadataAsked()).toBe(1);
  });
});
