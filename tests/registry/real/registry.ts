// Debian's docker-registry (distribution 2.8) on 127.0.0.1 with a config written for the run:
// plain HTTP, TLS, Basic through an htpasswd file, or Bearer tokens from our own issuer. It stops
// by itself after `lifetimeMs` even if a test forgets to stop it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export type RegistryAuth =
  | { type: "none" }
  | { type: "basic"; user: string; password: string }
  | { type: "token"; realm: string; service: string; issuer: string; certPem: string };

export interface RealRegistryOptions {
  auth?: RegistryAuth;
  tls?: { certPem: string; keyPem: string };
  /** Reuse this port (a restart of a killed registry). */
  port?: number;
  /** Reuse this storage (a restart keeps what was pushed). */
  dataDir?: string;
  lifetimeMs?: number;
}

export interface RealRegistry {
  host: string;
  port: number;
  endpoint: string;
  dataDir: string;
  /** What the registry wrote (its request log), for diagnosing a failed test. */
  output(): string;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** A free port on 127.0.0.1 (bound, then released for the registry to take). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

function authYaml(auth: RegistryAuth, dir: string): string {
  if (auth.type === "none") return "";
  if (auth.type === "basic") {
    // distribution reads bcrypt only; Bun writes the $2b$ form, which Go's bcrypt accepts.
    const hash = Bun.password.hashSync(auth.password, { algorithm: "bcrypt", cost: 4 });
    writeFileSync(join(dir, "htpasswd"), `${auth.user}:${hash}\n`);
    return `auth:\n  htpasswd:\n    realm: basic-realm\n    path: ${join(dir, "htpasswd")}\n`;
  }
  writeFileSync(join(dir, "token-ca.pem"), auth.certPem);
  return [
    "auth:",
    "  token:",
    `    realm: ${auth.realm}`,
    `    service: ${auth.service}`,
    `    issuer: ${auth.issuer}`,
    `    rootcertbundle: ${join(dir, "token-ca.pem")}`,
    "",
  ].join("\n");
}

function configYaml(opts: RealRegistryOptions, dir: string, dataDir: string, port: number): string {
  let tls = "";
  if (opts.tls) {
    writeFileSync(join(dir, "cert.pem"), opts.tls.certPem);
    writeFileSync(join(dir, "key.pem"), opts.tls.keyPem);
    tls = `  tls:\n    certificate: ${join(dir, "cert.pem")}\n    key: ${join(dir, "key.pem")}\n`;
  }
  return [
    "version: 0.1",
    "log:",
    "  level: info",
    "  accesslog:",
    "    disabled: true",
    "storage:",
    "  filesystem:",
    `    rootdirectory: ${dataDir}`,
    "  delete:",
    "    enabled: true",
    "http:",
    `  addr: 127.0.0.1:${port}`,
    tls + authYaml(opts.auth ?? { type: "none" }, dir),
  ].join("\n");
}

/** Polls GET /v2/ until the registry answers (any status); bounded to ~10 s. */
async function ready(endpoint: string, proc: Subprocess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`docker-registry exited with ${proc.exitCode}`);
    try {
      // Only "is it listening": trust is what the tests themselves check.
      const tls = { rejectUnauthorized: false };
      await fetch(`${endpoint}/v2/`, { tls, signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await Bun.sleep(50);
    }
  }
  throw new Error(`docker-registry at ${endpoint} did not answer within 10 s`);
}

export async function startRealRegistry(opts: RealRegistryOptions = {}): Promise<RealRegistry> {
  const dir = mkdtempSync(join(tmpdir(), "ir-real-registry-"));
  const dataDir = opts.dataDir ?? join(dir, "data");
  mkdirSync(dataDir, { recursive: true });
  const port = opts.port ?? (await freePort());
  writeFileSync(join(dir, "config.yml"), configYaml(opts, dir, dataDir, port));
  let out = "";
  const proc = Bun.spawn(["docker-registry", "serve", join(dir, "config.yml")], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const drain = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) out += new TextDecoder().decode(chunk);
  };
  void drain(proc.stdout);
  void drain(proc.stderr);
  const guard = setTimeout(() => proc.kill("SIGKILL"), opts.lifetimeMs ?? 120_000);
  guard.unref();
  const scheme = opts.tls ? "https" : "http";
  const endpoint = `${scheme}://127.0.0.1:${port}`;
  const kill = async () => {
    clearTimeout(guard);
    proc.kill("SIGKILL");
    await proc.exited;
  };
  try {
    await ready(endpoint, proc);
  } catch (err) {
    await kill();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return {
    host: `127.0.0.1:${port}`,
    port,
    endpoint,
    dataDir,
    output: () => out,
    kill,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
