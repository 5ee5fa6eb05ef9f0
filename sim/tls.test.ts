import { afterAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateClientCert, generateTls } from "./tls.ts";

const material = generateTls();
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: material.certPem, key: material.keyPem },
  fetch: () => new Response("ok"),
});
afterAll(() => server.stop(true));
const url = `https://127.0.0.1:${server.port}/`;

function openssl(args: string[]): { exitCode: number; out: string } {
  const r = Bun.spawnSync(["openssl", ...args], { stderr: "pipe", stdout: "pipe" });
  return { exitCode: r.exitCode, out: `${r.stdout.toString()}${r.stderr.toString()}` };
}
const hasOpenssl = Bun.which("openssl") !== null;

describe("generateTls", () => {
  test("a server certificate signed by the CA is trusted by fetch with that CA", async () => {
    const res = await fetch(url, { tls: { ca: material.caPem } });
    expect(await res.text()).toBe("ok");
  });

  test("localhost is in the SAN too", async () => {
    const res = await fetch(`https://localhost:${server.port}/`, { tls: { ca: material.caPem } });
    expect(res.status).toBe(200);
  });

  test("without the CA the certificate is rejected", async () => {
    await expect(fetch(url)).rejects.toThrow();
  });

  test("another run's CA does not verify this server", async () => {
    await expect(fetch(url, { tls: { ca: generateTls().caPem } })).rejects.toThrow();
  });

  test("the CA and leaf carry the extensions strict verifiers require", () => {
    const ca = new X509Certificate(material.caPem);
    const leaf = new X509Certificate(material.certPem);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toBe("IP Address:127.0.0.1, DNS:localhost");
    expect(leaf.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]);
    const from = Date.parse(leaf.validFrom);
    const to = Date.parse(leaf.validTo);
    expect(Math.abs(Date.now() - 3600_000 - from)).toBeLessThan(60_000);
    expect(Math.abs(Date.now() + 86_400_000 - to)).toBeLessThan(60_000);
  });

  test("a given CA is reused for the server certificate", () => {
    const again = generateTls({
      ca: { certPem: material.caPem, keyPem: material.caKeyPem },
      hosts: ["::1", "sim.test"],
    });
    expect(again.caPem).toBe(material.caPem);
    const leaf = new X509Certificate(again.certPem);
    expect(leaf.checkIssued(new X509Certificate(material.caPem))).toBe(true);
    expect(leaf.subjectAltName).toBe("IP Address:0:0:0:0:0:0:0:1, DNS:sim.test");
  });

  test("openssl verify accepts the chain strictly (when openssl is installed)", () => {
    if (!hasOpenssl) return; // the fetch tests above still prove the chain
    const dir = mkdtempSync(join(tmpdir(), "sim-tls-"));
    writeFileSync(join(dir, "ca.pem"), material.caPem);
    writeFileSync(join(dir, "cert.pem"), material.certPem);
    const r = openssl([
      "verify",
      "-x509_strict",
      "-purpose",
      "sslserver",
      "-CAfile",
      join(dir, "ca.pem"),
      join(dir, "cert.pem"),
    ]);
    expect(r.out).toContain(": OK");
    expect(r.exitCode).toBe(0);
  });
});

describe("generateClientCert", () => {
  test("a client certificate is issued by the CA for clientAuth", () => {
    const client = generateClientCert(material, "system:admin");
    const leaf = new X509Certificate(client.certPem);
    expect(leaf.checkIssued(new X509Certificate(material.caPem))).toBe(true);
    expect(leaf.subject).toBe("CN=system:admin");
    expect(leaf.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    if (!hasOpenssl) return;
    const dir = mkdtempSync(join(tmpdir(), "sim-tls-"));
    writeFileSync(join(dir, "ca.pem"), material.caPem);
    writeFileSync(join(dir, "client.pem"), client.certPem);
    const r = openssl([
      "verify",
      "-x509_strict",
      "-purpose",
      "sslclient",
      "-CAfile",
      join(dir, "ca.pem"),
      join(dir, "client.pem"),
    ]);
    expect(r.exitCode).toBe(0);
  });

  test("mutual TLS: a server requiring client certificates accepts it", async () => {
    const client = generateClientCert(material, "alice");
    const mtls = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: {
        cert: material.certPem,
        key: material.keyPem,
        ca: material.caPem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      fetch: () => new Response("hello"),
    });
    try {
      const res = await fetch(`https://127.0.0.1:${mtls.port}/`, {
        tls: { ca: material.caPem, cert: client.certPem, key: client.keyPem },
      });
      expect(await res.text()).toBe("hello");
      await expect(
        fetch(`https://127.0.0.1:${mtls.port}/`, { tls: { ca: material.caPem } }),
      ).rejects.toThrow();
    } finally {
      mtls.stop(true);
    }
  });
});
