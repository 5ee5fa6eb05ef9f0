// The 401 WARNING as an operator reads it from the binary: for an image on a private registry with
// no credential for its host, the host and the config field to set (the image's own registry, or
// the pull secret that lacks the host); with a credential that the registry refuses, that it was
// refused.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { startWorld, type World } from "../support/world.ts";

let w: World;
let b: SimRegistry;
let env: Record<string, string>;

beforeEach(async () => {
  w = await startWorld();
  const tls = generateTls();
  b = await startRegistry({ tls, anonymousPull: false, users: { alice: "right" } });
  const both = join(w.dir, "both-ca.pem");
  writeFileSync(both, `${readFileSync(w.caPath, "utf8")}\n${tls.caPem}`);
  env = { NODE_EXTRA_CA_CERTS: both };
  const digest = b.push("myorg/private", "v1");
  w.api.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "private",
    containers: [{ name: "app", image: `${b.host}/myorg/private@${digest}` }],
  });
});

afterEach(async () => {
  await b.stop();
  await w.stop();
});

function configure(registry: Record<string, unknown>) {
  w.writeConfig((c) => {
    c.images.push({
      repository: "myorg/private",
      tag: "v1",
      registry: { host: b.host, ...registry },
      targets: [{ kind: "Deployment", name: "private", container: "app" }],
    });
  });
}

function secret(name: string, host: string, password: string): string {
  const path = join(w.dir, name);
  const auth = btoa(`alice:${password}`);
  writeFileSync(path, JSON.stringify({ auths: { [host]: { auth } } }));
  return path;
}

const warning = (stderr: string) => stderr.split("\n").find((l) => l.includes("cannot resolve")) ?? "";

describe("a 401 names the host and where its credential goes", () => {
  test("no pull secret for the image's registry: the host and images[2].registry.dockerConfigJson", async () => {
    configure({});
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    const line = warning(r.stderr);
    expect(line).toContain(`cannot resolve ${b.host}/myorg/private:v1`);
    expect(line).toContain(
      `no credential is configured for ${b.host}: set images[2].registry.dockerConfigJson to a pull secret with an entry for ${b.host}`,
    );
    // The public registry's images were not touched by it.
    expect(r.stderr).toContain("api: recorded");
  });

  test("a pull secret with no entry for the host: its path and the keys it has", async () => {
    const path = secret("other.json", "ghcr.io", "right");
    configure({ dockerConfigJson: path });
    const r = await w.run([], env);
    expect(warning(r.stderr)).toContain(
      `no credential is configured for ${b.host}: images[2].registry.dockerConfigJson ${path} has no entry for it (its keys are "ghcr.io")`,
    );
  });

  test("a credential the registry refuses: refused, not missing", async () => {
    configure({ dockerConfigJson: secret("wrong.json", b.host, "wrong") });
    const r = await w.run([], env);
    const line = warning(r.stderr);
    expect(line).toContain("refused the dockerconfigjson credential");
    expect(line).not.toContain("no credential is configured");
    expect(r.stderr).not.toContain("wrong");
  });

  test("the right credential: recorded", async () => {
    configure({ dockerConfigJson: secret("right.json", b.host, "right") });
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    expect(w.book()["last-refreshed-private-digest"]).toMatch(/^sha256:/);
  });
});
