// A small token service for distribution's `auth: token`: it checks Basic credentials (when it
// is given some), then signs an RS256 JWT whose x5c header carries its certificate, which the
// registry verifies against its rootcertbundle. It records every request, so tests can see
// which credentials reached it.
import { createSign } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface IssuerRequest {
  authorization?: string;
  scopes: string[];
  service?: string;
}

export interface TokenIssuer {
  realm: string;
  service: string;
  issuer: string;
  certPem: string;
  requests: IssuerRequest[];
  stop(): void;
}

/** An RSA key and a self-signed certificate from openssl (Go verifies the chain, so it must be X.509). */
function rsaCert(): { keyPem: string; certPem: string } {
  const dir = mkdtempSync(join(tmpdir(), "ir-token-key-"));
  try {
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    const r = Bun.spawnSync(
      ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert].concat([
        "-days",
        "1",
        "-subj",
        "/CN=image-refresh-test-token-issuer",
      ]),
      { stdout: "pipe", stderr: "pipe" },
    );
    if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`);
    return { keyPem: readFileSync(key, "utf8"), certPem: readFileSync(cert, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** `repository:a/b:pull,push` → the JWT access entry distribution checks. */
function access(scope: string): { type: string; name: string; actions: string[] } {
  const parts = scope.split(":");
  const actions = (parts.at(-1) ?? "").split(",").filter(Boolean);
  return { type: parts[0] ?? "", name: parts.slice(1, -1).join(":"), actions };
}

export function startTokenIssuer(opts: { basic?: { user: string; password: string } } = {}): TokenIssuer {
  const { keyPem, certPem } = rsaCert();
  const der = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ""), "base64");
  const service = "image-refresh-real-registry";
  const issuer = "image-refresh-test-issuer";
  const requests: IssuerRequest[] = [];
  const expected = opts.basic ? `Basic ${btoa(`${opts.basic.user}:${opts.basic.password}`)}` : undefined;
  const sign = (scopes: string[]) => {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT", x5c: [der.toString("base64")] }));
    const claims = { iss: issuer, sub: "tester", aud: service, iat: now, nbf: now - 60, exp: now + 300 };
    const body = b64url(JSON.stringify({ ...claims, jti: crypto.randomUUID(), access: scopes.map(access) }));
    const sig = createSign("RSA-SHA256").update(`${header}.${body}`).sign(keyPem);
    return `${header}.${body}.${b64url(sig)}`;
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      const authorization = req.headers.get("authorization") ?? undefined;
      const scopes = url.searchParams.getAll("scope").flatMap((s) => s.split(" ").filter(Boolean));
      requests.push({ authorization, scopes, service: url.searchParams.get("service") ?? undefined });
      if (expected && authorization !== expected) return new Response("bad credentials", { status: 401 });
      const token = sign(scopes);
      return Response.json({ token, access_token: token, expires_in: 300 });
    },
  });
  const guard = setTimeout(() => server.stop(true), 120_000);
  guard.unref();
  return {
    realm: `http://127.0.0.1:${server.port}/token`,
    service,
    issuer,
    certPem,
    requests,
    stop() {
      clearTimeout(guard);
      server.stop(true);
    },
  };
}
