// The on-call path from a laptop: a copy of the CronJob's config (its pull secret path does not
// exist here) and a kubeconfig with several contexts. The compiled binary against the simulators.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PREFIX, startWorld, type World, writes } from "../support/world.ts";

const MOUNTED = "/etc/image-refresh/pull-secret/.dockerconfigjson";

let w: World;
let twoContexts: string;
beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // first observation
  // current-context is a cluster that is not there; "sim" is the simulated one.
  const sim = w.api.kubeconfig();
  twoContexts = join(w.dir, "two-contexts");
  writeFileSync(
    twoContexts,
    sim
      .replace("clusters:\n", "clusters:\n- name: gone\n  cluster:\n    server: https://127.0.0.1:1\n")
      .replace("contexts:\n", "contexts:\n- name: prod\n  context:\n    cluster: gone\n    user: sim\n")
      .replace("current-context: sim", "current-context: prod"),
  );
});
afterAll(async () => {
  await w.stop();
});
beforeEach(() => {
  w.writeConfig();
  w.api.clearLog();
  w.registry.clearLog();
});

describe("--context", () => {
  test("status, rearm and a tick reach the named context, not current-context", async () => {
    for (const cmd of [["status"], ["rearm", "--dry-run"], ["tick", "--dry-run"]]) {
      const r = await w.run([...cmd, "--kubeconfig", twoContexts, "--context", "sim"]);
      expect(`${cmd[0]} ${r.code}`).toBe(`${cmd[0]} 0`);
    }
    expect(w.api.log.length).toBeGreaterThan(0);
  });
  test("without it, current-context is used (here: a cluster that is not there)", async () => {
    const r = await w.run(["status", "--kubeconfig", twoContexts]);
    expect(r.code).toBe(1);
    expect(w.api.log).toEqual([]);
  });
  test("an unknown context exits 2 naming the known ones, before any request", async () => {
    const r = await w.run(["rearm", "--kubeconfig", twoContexts, "--context", "staging"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Cannot use --context "staging"');
    expect(r.stderr).toContain('known contexts: "prod", "sim"');
    expect(w.api.log).toEqual([]);
  });
  test("a command that talks to no cluster does not take it", async () => {
    const r = await w.run(["validate", "--context", "sim"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("validate does not take --context");
  });
});

describe("a copied config whose pull secret is not on this machine", () => {
  beforeEach(() => w.writeConfig((c) => (c.registry.dockerConfigJson = MOUNTED)));

  test("status: a WARNING, the registry asked anonymously, and the output says so", async () => {
    const r = await w.run(["status"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`WARNING: registry.dockerConfigJson ${MOUNTED} does not exist here`);
    expect(r.stdout).toContain(`registry asked ANONYMOUSLY: registry.dockerConfigJson ${MOUNTED}`);
    expect(r.stdout).toMatch(/ {2}registry: sha256:[0-9a-f]{64}/);
    const heads = w.registry.log.filter((e) => e.method === "HEAD");
    expect(heads.length).toBeGreaterThan(0);
    expect(
      w.registry.log.every(
        (e) => !("authorization" in e.headers) || !/^Basic /.test(e.headers.authorization ?? ""),
      ),
    ).toBe(true);
    const json = await w.run(["status", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).anonymousRegistry).toContain("asked anonymously");
  });

  test("rearm needs no registry: no request, no word about the pull secret", async () => {
    w.setBook({ "refresh-attempt-api": "3", "refresh-flap-detected-api": "3" });
    const r = await w.run(["rearm", "api"]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("dockerConfigJson");
    expect(w.registry.log).toEqual([]);
    expect(writes(w.api).length).toBe(1);
    expect(w.ours()[`${PREFIX}/refresh-attempt-api`]).toBeUndefined();
  });

  test("reject IMAGE DIGEST needs no registry: no request, no word about the pull secret", async () => {
    const digest = `sha256:${"ab".repeat(32)}`;
    const r = await w.run(["reject", "node-agent", digest]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("dockerConfigJson");
    expect(w.registry.log).toEqual([]);
    expect(w.ours()[`${PREFIX}/rejected-node-agent-digest`]).toBe(digest);
  });

  test("reject IMAGE: a WARNING, then the tag's current digest asked anonymously", async () => {
    const r = await w.run(["reject", "node-agent", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`WARNING: registry.dockerConfigJson ${MOUNTED} does not exist here`);
    expect(r.stderr).toMatch(/node-agent@sha256:[0-9a-f]{64}/);
    expect(w.registry.log.some((e) => e.method === "HEAD")).toBe(true);
  });

  test("the tick itself still refuses it: exit 2 before any request", async () => {
    const r = await w.run(["tick"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `registry.dockerConfigJson: Cannot read registry credentials from ${MOUNTED}: ENOENT`,
    );
    expect(w.api.log).toEqual([]);
    expect(w.registry.log).toEqual([]);
  });
});

describe("a pull secret with no entry for the registry host", () => {
  test("a WARNING naming the host and the keys that are there, for the tick and status", async () => {
    const path = join(w.dir, "other-hosts.json");
    const auth = Buffer.from("u:p").toString("base64");
    writeFileSync(
      path,
      JSON.stringify({ auths: { "ghcr.io": { auth }, "https://index.docker.io/v1/": { auth } } }),
    );
    w.writeConfig((c) => (c.registry.dockerConfigJson = path));
    for (const cmd of ["tick", "status"]) {
      const r = await w.run([cmd]);
      expect(`${cmd} ${r.code}`).toBe(`${cmd} 0`);
      expect(r.stderr).toContain(
        `WARNING: registry.dockerConfigJson ${path} has no entry for the registry host ${w.registry.host} (its keys are "ghcr.io", "https://index.docker.io/v1/")`,
      );
    }
  });
  test("no warning when it has one", async () => {
    const path = join(w.dir, "this-host.json");
    const auth = Buffer.from("u:p").toString("base64");
    writeFileSync(path, JSON.stringify({ auths: { [w.registry.host]: { auth } } }));
    w.writeConfig((c) => (c.registry.dockerConfigJson = path));
    const r = await w.run(["tick"]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("WARNING");
  });
});

describe("a registry whose CA this process does not trust", () => {
  test("the failure names NODE_EXTRA_CA_CERTS, the setting that fixes it", async () => {
    // The API server's CA comes from the kubeconfig; the registry's only from NODE_EXTRA_CA_CERTS.
    const r = await w.run(["status", "--json"], { NODE_EXTRA_CA_CERTS: "" });
    const errors = JSON.parse(r.stdout).images.map((i: { registryError?: string }) => i.registryError);
    expect(errors[0]).toMatch(
      /(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT)/,
    );
    expect(errors[0]).toContain("set NODE_EXTRA_CA_CERTS to a PEM file holding the registry's CA");
  });
});

describe("dry-run lines say what would be done, not what was done", () => {
  test("a first observation: would record", async () => {
    const digestKey = "last-refreshed-node-agent-digest";
    const kept = w.book()[digestKey];
    w.setBook({ [digestKey]: null });
    const r = await w.run(["tick", "--dry-run"]);
    w.setBook({ [digestKey]: kept ?? null });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/\] would record node-agent=sha256:[0-9a-f]{64}/);
    expect(r.stderr).not.toMatch(/\] recorded node-agent=/);
    expect(writes(w.api)).toEqual([]);
  });
  test("reject --dry-run: would reject", async () => {
    const r = await w.run(["reject", "node-agent", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /\] would reject myorg\/node-agent@sha256:[0-9a-f]{64}: node-agent would not roll out/,
    );
    expect(r.stderr).not.toMatch(/\] rejected /);
    expect(writes(w.api)).toEqual([]);
  });
});
