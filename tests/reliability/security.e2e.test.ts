// The security posture and the logs end to end: the service-account token and the registry
// credentials never show in a log, an error message, a span or the process arguments; TLS
// verification is off only when the kubeconfig says so; credentials go only to their own host,
// and over plain http only when the operator allowed it.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startCollector } from "../../sim/collector.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import type { RunResult } from "../support/binary.ts";
import { floatTargets, SCENARIO_TARGETS, startWorld, type World } from "../support/world.ts";
import { k, outcomeOf, STORE_PATH } from "./scene.ts";
import { BIN, run, start } from "./spawn.ts";

const USER = "robot";
const PASSWORD = `pw-${crypto.randomUUID()}`;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function world(): Promise<World> {
  const w = await startWorld();
  stops.push(() => w.stop());
  return w;
}

async function registry(opts: Parameters<typeof startRegistry>[0]): Promise<SimRegistry> {
  const r = await startRegistry(opts);
  stops.push(() => r.stop());
  r.push("myorg/api", "stable");
  r.push("myorg/node-agent", "stable", { multiArch: true });
  return r;
}

/** A dockerconfigjson file with `user:password` for `host`. */
function dockerConfig(w: World, host: string, password = PASSWORD): string {
  const path = join(w.dir, `docker-${crypto.randomUUID()}.json`);
  const auth = Buffer.from(`${USER}:${password}`).toString("base64");
  writeFileSync(path, JSON.stringify({ auths: { [host]: { auth } } }));
  return path;
}

/** The targets name the registry the config names, as their pulls must (the verdict compares those). */
const onRegistry = (w: World, reg: SimRegistry) =>
  floatTargets(w, Object.keys(SCENARIO_TARGETS), { host: reg.host });

/** A world whose registry wants credentials, over TLS from a second CA the binary also trusts. */
async function privateRegistryWorld() {
  const w = await world();
  const tls = generateTls();
  const reg = await registry({ tls, auth: "bearer", users: { [USER]: PASSWORD }, anonymousPull: false });
  const bundle = join(w.dir, "bundle.pem");
  writeFileSync(bundle, `${readFileSync(w.caPath, "utf8")}\n${tls.caPem}`);
  const docker = dockerConfig(w, reg.host);
  w.writeConfig((c) => {
    c.registry = { host: reg.host, dockerConfigJson: docker };
  });
  await onRegistry(w, reg);
  return { w, reg, env: { NODE_EXTRA_CA_CERTS: bundle } };
}

function secretsOf(w: World, reg: SimRegistry): string[] {
  // Bearer tokens the registry handed out are credentials too.
  const bearer = reg.log.flatMap((e) => /^Bearer (.+)$/.exec(e.headers.authorization ?? "")?.slice(1) ?? []);
  return [w.api.token, PASSWORD, Buffer.from(`${USER}:${PASSWORD}`).toString("base64"), ...bearer];
}

describe("secrets never leak", () => {
  test("not in text or JSON logs, error messages or exported spans and metrics", async () => {
    const { w, reg, env } = await privateRegistryWorld();
    const collector = startCollector();
    stops.push(() => collector.stop());
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    const outputs: RunResult[] = [];
    for (const format of ["text", "json"]) {
      const tick = (extra: Record<string, string> = {}) =>
        run(w, ["tick", "--log-format", format], { ...env, ...otel, ...extra });
      w.setBook({
        [k("last-refreshed-api-digest")]: null,
        [k("last-refreshed-node-agent-digest")]: null,
      });
      outputs.push(await tick()); // first observation, with a token request carrying the password
      reg.push("myorg/api", "stable");
      w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
      outputs.push(await tick()); // a failed rollout: error messages with URLs and reasons
      w.api.setMode("Deployment", "apps", "api-proxy", "healthy");
      outputs.push(await run(w, ["status", "--log-format", format], env));
      // Wrong registry password and a rejected API token: the errors that quote requests.
      w.writeConfig(
        (c) =>
          (c.registry = { host: reg.host, dockerConfigJson: dockerConfig(w, reg.host, `${PASSWORD}-old`) }),
      );
      outputs.push(await tick());
      const token = w.api.token;
      w.api.rotateToken("rotated-elsewhere");
      outputs.push(await tick());
      w.api.rotateToken(token);
      w.writeConfig((c) => (c.registry = { host: reg.host, dockerConfigJson: dockerConfig(w, reg.host) }));
    }
    expect(outputs.map(outcomeOf).slice(0, 2)).toEqual(["recorded", "failed"]);
    expect(outputs.at(-1)?.code).toBe(1);
    expect(reg.log.some((e) => e.headers.authorization?.startsWith("Basic "))).toBe(true);
    const exported = JSON.stringify([collector.spans, collector.metrics]);
    expect(collector.spans.length).toBeGreaterThan(0);
    for (const secret of secretsOf(w, reg)) {
      for (const r of outputs) expect(r.stdout + r.stderr).not.toContain(secret);
      expect(exported).not.toContain(secret);
    }
  }, 60_000);

  test("not in the process arguments: the binary is given files, never secrets", async () => {
    const { w, reg, env } = await privateRegistryWorld();
    w.api.faults.add({ method: "GET", path: STORE_PATH, fault: { type: "hang" } });
    const { proc, done } = start(w, ["tick"], env);
    while (w.api.log.length === 0) await Bun.sleep(10);
    const argv = readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    proc.kill("SIGTERM");
    await done;
    expect(argv).toEqual([BIN, "tick", "--config", w.configPath, "--kubeconfig", w.kubeconfigPath]);
    for (const secret of secretsOf(w, reg)) expect(argv.join(" ")).not.toContain(secret);
  }, 20_000);
});

describe("TLS to the API server", () => {
  const noCa = (w: World) => {
    const path = join(w.dir, "kubeconfig-no-ca");
    writeFileSync(path, w.api.kubeconfig({ caPem: "" }));
    return ["tick", "--kubeconfig", path];
  };
  const cases: Array<[string, Record<string, string>]> = [
    ["a kubeconfig without CA data is refused", {}],
    ["NODE_TLS_REJECT_UNAUTHORIZED=0 does not turn verification off", { NODE_TLS_REJECT_UNAUTHORIZED: "0" }],
  ];
  for (const [name, env] of cases) {
    test(name, async () => {
      const w = await world();
      // An empty bundle: only the system roots, which do not know the simulator's CA.
      const r = await run(w, noCa(w), { NODE_EXTRA_CA_CERTS: "/dev/null", ...env });
      expect(r.code).toBe(1);
      expect(w.api.log).toEqual([]);
      expect(r.stderr).not.toContain(w.api.token);
    });
  }

  test("only the kubeconfig's insecure-skip-tls-verify turns it off", async () => {
    const w = await world();
    const path = join(w.dir, "kubeconfig-insecure");
    writeFileSync(path, w.api.kubeconfig({ insecure: true }));
    const r = await run(w, ["tick", "--kubeconfig", path], { NODE_EXTRA_CA_CERTS: "/dev/null" });
    expect(w.api.log.length).toBeGreaterThan(0);
    // The API server answers; the registry (same CA, no skip option) is still refused, so nothing
    // resolves: every image is unresolved and counts it, never a quiet noop.
    expect(outcomeOf(r), r.stderr).toBe("unresolved");
    expect(r.code).toBe(0);
    expect(w.ours()[k("unresolved-streak-api")]).toBe("1");
    expect(w.ours()[k("unresolved-streak-node-agent")]).toBe("1");
    expect(w.registry.log).toEqual([]);
  });
});

describe("registry credentials stay with their registry", () => {
  test("NODE_TLS_REJECT_UNAUTHORIZED=0 does not send credentials to an unverified registry", async () => {
    const { w, reg } = await privateRegistryWorld();
    // The bundle with the registry's CA is not given: only the system roots.
    const r = await run(w, ["tick"], { NODE_EXTRA_CA_CERTS: "/dev/null", NODE_TLS_REJECT_UNAUTHORIZED: "0" });
    expect(reg.log).toEqual([]);
    expect(r.stderr).not.toContain(PASSWORD);
  });

  test("registry.insecure allows http, never an unverified certificate", async () => {
    const { w, reg } = await privateRegistryWorld();
    w.writeConfig((c) => (c.registry = { ...c.registry, host: reg.host, insecure: true }));
    const r = await run(w); // the bundle with the registry's CA is not given
    expect(r.stderr).toContain("WARNING");
    expect(outcomeOf(r), r.stderr).toBe("unresolved");
    expect(reg.log).toEqual([]);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBeUndefined();
  });

  const plain: Array<[string, boolean]> = [
    ["plain http without insecure: no request at all", false],
    ["plain http with insecure: allowed, as the operator said", true],
  ];
  for (const [name, insecure] of plain) {
    test(name, async () => {
      const w = await world();
      const reg = await registry({ auth: "basic", users: { [USER]: PASSWORD } });
      expect(reg.url.startsWith("http://")).toBe(true);
      const docker = dockerConfig(w, reg.host);
      w.writeConfig(
        (c) => (c.registry = { host: reg.host, endpoint: reg.url, insecure, dockerConfigJson: docker }),
      );
      await onRegistry(w, reg);
      const r = await run(w);
      if (insecure) {
        expect(outcomeOf(r)).toBe("recorded");
        expect(reg.log.every((e) => e.headers.authorization?.startsWith("Basic ") || e.path === "/v2/")).toBe(
          true,
        );
      } else {
        expect(reg.log).toEqual([]);
        expect(r.stderr).toContain("insecure");
        // A configuration error: exit 2, before any network call.
        expect(r.code, r.stderr).toBe(2);
      }
    });
  }

  test("credentials for another host are never sent to this one", async () => {
    const w = await world();
    const docker = dockerConfig(w, "registry.other.example");
    w.writeConfig((c) => (c.registry.dockerConfigJson = docker));
    const r = await run(w);
    expect(outcomeOf(r)).toBe("recorded");
    expect(w.registry.log.length).toBeGreaterThan(0);
    expect(w.registry.log.some((e) => e.headers.authorization?.startsWith("Basic "))).toBe(false);
  });
});
