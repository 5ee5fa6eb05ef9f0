// Exec credential plugins, end to end: the compiled binary runs `status` and `rearm` against the
// simulated API server with a kubeconfig whose user is a small plugin script written here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateClientCert, generateTls } from "../../sim/tls.ts";
import { runBinary } from "../../tests/support/binary.ts";
import { PREFIX, startWorld, type World } from "../../tests/support/world.ts";
import { parseExecConfig } from "./exec.ts";

const V1 = "client.authentication.k8s.io/v1";
const V1BETA1 = "client.authentication.k8s.io/v1beta1";
const FAR = "2999-01-01T00:00:00Z";

let w: World;
let n = 0;
beforeAll(async () => {
  w = await startWorld();
  expect((await w.run()).code).toBe(0); // digests recorded, so status has something to show
});
afterAll(async () => {
  await w.stop();
});

/** A fresh directory per test: the plugin, its run log and the kubeconfig that names it. */
function scratch(): string {
  const d = join(w.dir, `exec-${++n}`);
  mkdirSync(d);
  return d;
}

/** A /bin/sh plugin that logs each run, saves its KUBERNETES_EXEC_INFO and prints `body`. */
function plugin(dir: string, body: string, extra = ""): string {
  const path = join(dir, "plugin.sh");
  writeFileSync(
    path,
    `#!/bin/sh\necho run >> "${dir}/runs"\nprintf '%s' "$KUBERNETES_EXEC_INFO" > "${dir}/info"\n${extra}\ncat <<'EOF'\n${body}\nEOF\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

const credential = (status: object, apiVersion = V1) =>
  JSON.stringify({ apiVersion, kind: "ExecCredential", status });

function kubeconfig(
  dir: string,
  exec: object,
  server = w.api.url,
  caPem = readFileSync(w.caPath, "utf8"),
): string {
  const path = join(dir, "kubeconfig");
  const ca = Buffer.from(caPem).toString("base64");
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "sim", cluster: { server, "certificate-authority-data": ca } }],
    users: [{ name: "sim", user: { exec } }],
    contexts: [{ name: "sim", context: { cluster: "sim", user: "sim" } }],
    "current-context": "sim",
  };
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

const runs = (dir: string) =>
  (existsSync(join(dir, "runs")) ? readFileSync(join(dir, "runs"), "utf8") : "").split("\n").filter(Boolean)
    .length;
/** Alive and not a zombie waiting for init to reap it. */
function running(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : "";
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state !== "" && state !== "Z" && state !== "X";
}
const info = (dir: string) => JSON.parse(readFileSync(join(dir, "info"), "utf8"));

describe("a token from an exec plugin", () => {
  test("v1: status succeeds; one run serves every request; cluster info and env reach the plugin", async () => {
    const d = scratch();
    const cmd = plugin(
      d,
      credential({ token: w.api.token, expirationTimestamp: FAR }),
      'echo "$GREETING" > "$0.env"',
    );
    const kc = kubeconfig(d, {
      apiVersion: V1,
      command: cmd,
      args: ["--region", "eu"],
      env: [{ name: "GREETING", value: "hello" }],
      interactiveMode: "Never",
      provideClusterInfo: true,
    });
    w.api.clearLog();
    const r = await w.run(["status", "--json", "--kubeconfig", kc]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(r.stdout).images.map((i: { key: string }) => i.key)).toEqual(["api", "node-agent"]);
    expect(w.api.log.length).toBeGreaterThan(1);
    expect(runs(d)).toBe(1);
    expect(readFileSync(`${cmd}.env`, "utf8")).toBe("hello\n");
    expect(info(d)).toEqual({
      kind: "ExecCredential",
      apiVersion: V1,
      spec: {
        interactive: false,
        cluster: {
          server: w.api.url,
          "certificate-authority-data": Buffer.from(readFileSync(w.caPath)).toString("base64"),
          config: null,
        },
      },
    });
  });

  test("v1beta1: interactiveMode defaults to IfAvailable; no cluster info unless asked; rearm writes", async () => {
    const d = scratch();
    const cmd = plugin(d, credential({ token: w.api.token }, V1BETA1));
    const kc = kubeconfig(d, { apiVersion: V1BETA1, command: cmd });
    w.setBook({ "refresh-attempt-api": "3" });
    const r = await w.run(["rearm", "--kubeconfig", kc]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("re-armed: api: removed refresh-attempt-api (was 3)");
    expect(w.book()["refresh-attempt-api"]).toBeUndefined();
    expect(runs(d)).toBe(1);
    expect(info(d)).toEqual({ kind: "ExecCredential", apiVersion: V1BETA1, spec: { interactive: false } });
  });

  test("an expired credential is not reused: the plugin runs again for later requests", async () => {
    const d = scratch();
    const cmd = plugin(d, credential({ token: w.api.token, expirationTimestamp: "2000-01-01T00:00:00Z" }));
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" });
    w.api.clearLog();
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).toBe(0);
    // status reads the state object, then its targets concurrently: requests in flight together
    // may share one run, but no request after a run reuses its expired credential.
    expect(w.api.log.length).toBe(3);
    expect(runs(d)).toBe(2);
  });

  test("a relative command resolves against the kubeconfig's directory", async () => {
    const d = scratch();
    plugin(d, credential({ token: w.api.token }));
    const kc = kubeconfig(d, { apiVersion: V1, command: "./plugin.sh", interactiveMode: "Never" });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).toBe(0);
    expect(runs(d)).toBe(1);
  });
});

describe("the same plugin under the real kubectl", () => {
  const kubectl = Bun.which("kubectl");
  if (!kubectl && !process.env.CI)
    console.log("skip exec plugin vs kubectl: needs kubectl (apt kubernetes-client)");
  test.skipIf(!kubectl && !process.env.CI)(
    "kubectl hands the plugin the same KUBERNETES_EXEC_INFO, v1 and v1beta1",
    async () => {
      if (!kubectl)
        throw new Error("Cannot compare with kubectl: kubectl is missing (apt kubernetes-client)");
      for (const apiVersion of [V1, V1BETA1]) {
        const ours = scratch();
        const theirs = scratch();
        const exec = (d: string) => ({
          apiVersion,
          command: plugin(d, credential({ token: w.api.token }, apiVersion)),
          interactiveMode: "Never",
          provideClusterInfo: true,
        });
        expect((await w.run(["status", "--kubeconfig", kubeconfig(ours, exec(ours))])).code).toBe(0);
        const p = Bun.spawn(
          [
            kubectl,
            "--kubeconfig",
            kubeconfig(theirs, exec(theirs)),
            "--cache-dir",
            join(theirs, "cache"),
            "-n",
            "apps",
            "get",
            "deployments",
          ],
          {
            stdin: "ignore",
            stdout: "pipe",
            stderr: "pipe",
            env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: theirs },
          },
        );
        const err = await new Response(p.stderr).text();
        expect({ code: await p.exited, err }).toEqual({ code: 0, err: "" });
        expect(info(ours)).toEqual(info(theirs));
      }
    },
  );
});

describe("a failing plugin", () => {
  test("non-zero exit: client-go's message with the plugin's stderr, never its stdout", async () => {
    const d = scratch();
    const secret = "tok-must-not-leak";
    const cmd = plugin(d, credential({ token: secret }), "echo 'login required: run sso login' >&2");
    writeFileSync(cmd, `${readFileSync(cmd, "utf8")}exit 3\n`);
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `getting credentials: exec: executable ${cmd} failed with exit code 3; stderr: login required: run sso login`,
    );
    expect(r.stdout + r.stderr).not.toContain(secret);
  });

  test("a hung plugin is killed at requestTimeout, with what it said so far", async () => {
    const d = scratch();
    const cmd = plugin(
      d,
      credential({ token: w.api.token }),
      `echo 'waiting for browser login' >&2\nsleep 60 &\necho $! > "${d}/child"\nwait`,
    );
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" });
    w.writeConfig((c) => {
      c.requestTimeout = "1s";
    });
    try {
      const r = await w.run(["status", "--kubeconfig", kc]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        `exec: executable ${cmd} did not finish within 1000ms; stderr: waiting for browser login`,
      );
      const child = Number(readFileSync(join(d, "child"), "utf8"));
      expect(running(child)).toBe(false); // the script's own child went with it
    } finally {
      w.writeConfig();
    }
  });

  test("missing executable: not found, with the installHint stripped of escapes", async () => {
    const d = scratch();
    const kc = kubeconfig(d, {
      apiVersion: V1,
      command: "no-such-auth-plugin",
      interactiveMode: "Never",
      installHint: "\u001b[31minstall it with: apt install no-such-auth-plugin\u001b[0m",
    });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("exec: executable no-such-auth-plugin not found");
    expect(r.stderr).toContain("install it with: apt install no-such-auth-plugin");
    expect(r.stderr).not.toContain("\u001b[31m");
  });

  test("interactiveMode Always without a terminal fails before running the plugin", async () => {
    const d = scratch();
    const cmd = plugin(d, credential({ token: w.api.token }));
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Always" });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      "exec plugin cannot support interactive mode: standard input is not a terminal",
    );
    expect(runs(d)).toBe(0);
  });

  test("the wrong apiVersion back is refused with client-go's message", async () => {
    const d = scratch();
    const cmd = plugin(d, credential({ token: w.api.token }, V1BETA1));
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.stderr).toContain(
      `exec plugin is configured to use API version ${V1}, plugin returned version ${V1BETA1}`,
    );
    expect(r.stdout + r.stderr).not.toContain(w.api.token);
  });

  test("a token the server refuses: the plugin is run again once, then the 401 is reported", async () => {
    const d = scratch();
    const cmd = plugin(d, credential({ token: "revoked" }));
    const kc = kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" });
    const r = await w.run(["status", "--kubeconfig", kc]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("(401)");
    expect(runs(d)).toBe(2);
  });
});

describe("a client certificate from the plugin", () => {
  test("is presented in the TLS handshake to a server that requires one", async () => {
    const tls = generateTls(); // the gate's own CA, which also signs the client certificate
    const client = generateClientCert(tls, "alice");
    const simCa = readFileSync(w.caPath, "utf8");
    // Requires a client certificate signed by the CA, then forwards with the simulator's token.
    const gate = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: tls.certPem, key: tls.keyPem, ca: tls.caPem, requestCert: true, rejectUnauthorized: true },
      async fetch(req) {
        const u = new URL(req.url);
        const res = await fetch(`${w.api.url}${u.pathname}${u.search}`, {
          method: req.method,
          headers: { ...Object.fromEntries(req.headers), authorization: `Bearer ${w.api.token}` },
          body: req.method === "GET" ? undefined : await req.text(),
          tls: { ca: simCa },
        });
        return new Response(await res.text(), { status: res.status, headers: res.headers });
      },
    });
    try {
      const server = `https://127.0.0.1:${gate.port}`;
      const d = scratch();
      const cmd = plugin(
        d,
        credential({ clientCertificateData: client.certPem, clientKeyData: client.keyPem }),
      );
      const r = await w.run([
        "status",
        "--kubeconfig",
        kubeconfig(d, { apiVersion: V1, command: cmd, interactiveMode: "Never" }, server, tls.caPem),
      ]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      // Control: the same gate with a token-only plugin fails the handshake.
      const e = scratch();
      const tokenOnly = plugin(e, credential({ token: w.api.token }));
      const refused = await w.run([
        "status",
        "--kubeconfig",
        kubeconfig(e, { apiVersion: V1, command: tokenOnly, interactiveMode: "Never" }, server, tls.caPem),
      ]);
      expect(refused.code).not.toBe(0);
    } finally {
      gate.stop(true);
    }
  });
});

describe("the CronJob's in-cluster path", () => {
  test("never runs a plugin, even with one in ~/.kube/config", async () => {
    const home = scratch();
    mkdirSync(join(home, ".kube"));
    const cmd = plugin(home, credential({ token: w.api.token }));
    writeFileSync(
      join(home, ".kube", "config"),
      readFileSync(kubeconfig(home, { apiVersion: V1, command: cmd, interactiveMode: "Never" })),
    );
    const port = new URL(w.api.url).port;
    const env = { HOME: home, NODE_EXTRA_CA_CERTS: w.caPath };
    const inCluster = await runBinary(["status", "--config", w.configPath], {
      env: { ...env, KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: port },
    });
    expect(inCluster.stderr).toContain("Cannot load in-cluster configuration");
    expect(runs(home)).toBe(0);
    // Control: outside a cluster the same HOME does run it.
    const outside = await runBinary(["status", "--config", w.configPath], { env });
    expect(outside.code).toBe(0);
    expect(runs(home)).toBe(1);
  });
});

describe("parseExecConfig: client-go's validation and defaults", () => {
  const parse = (raw: unknown) => () => parseExecConfig(raw, "users[u].user.exec", "/home/me/.kube/config");
  test("command, apiVersion and (for v1) interactiveMode are required", () => {
    expect(parse({ apiVersion: V1, interactiveMode: "Never" })).toThrow("command must be specified");
    expect(parse({ command: "x", apiVersion: "v2" })).toThrow('exec plugin: invalid apiVersion "v2"');
    expect(parse({ command: "x", apiVersion: V1 })).toThrow("interactiveMode must be specified");
    expect(parse({ command: "x", apiVersion: V1, interactiveMode: "Sometimes" })).toThrow(
      'invalid interactiveMode "Sometimes"',
    );
  });
  test("v1beta1 defaults to IfAvailable; a relative path resolves against the kubeconfig", () => {
    expect(parse({ command: "./bin/p", apiVersion: V1BETA1 })()).toMatchObject({
      command: "/home/me/.kube/bin/p",
      interactiveMode: "IfAvailable",
      provideClusterInfo: false,
    });
  });
});
