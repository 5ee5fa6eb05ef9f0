// The real signer of the signature stories: cosign, built from its Go module (peers/cosign).
// skopeo would write the same `.sig` tag (registries.d `use-sigstore-attachments: true`, signing
// with --sign-by-sigstore-private-key and a cosign key), but Debian builds it with sigstore
// signing disabled.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { peer } from "./peers.ts";

const PASSWORD = "signing-test-passphrase";

export interface KeyPair {
  privateKey: string;
  publicKey: string;
}

async function run(cmd: string[], env: Record<string, string> = {}): Promise<string> {
  const p = Bun.spawn(cmd, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
    env: { ...process.env, COSIGN_PASSWORD: PASSWORD, ...env },
  });
  const timer = setTimeout(() => p.kill("SIGKILL"), 120_000);
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}`);
  return `${out}${err}`;
}

export const cosignPath = () => peer("cosign", "cosign");

/** `cosign generate-key-pair` in a directory of its own: cosign.key (encrypted) and cosign.pub. */
export async function keyPair(): Promise<KeyPair> {
  const dir = mkdtempSync(join(tmpdir(), "ir-cosign-key-"));
  await run([cosignPath(), "generate-key-pair", "--output-key-prefix", join(dir, "cosign")]);
  return { privateKey: join(dir, "cosign.key"), publicKey: join(dir, "cosign.pub") };
}

/** cosign's first format: the simple-signing `.sig` tag instead of a sigstore bundle, no transparency log. */
export const LEGACY = ["--new-bundle-format=false", "--use-signing-config=false", "--tlog-upload=false"];

/**
 * The sigstore bundle without a transparency log: cosign 3 wants a signing config that names no
 * log (`cosign signing-config create` from scratch names no service at all).
 */
export async function bundleFlags(): Promise<string[]> {
  const path = join(mkdtempSync(join(tmpdir(), "ir-cosign-sc-")), "signing-config.json");
  await run([cosignPath(), "signing-config", "create", "--out", path]);
  return ["--signing-config", path];
}

/** `cosign sign --key` of `ref` (by digest) over plain HTTP, in the format `flags` ask for. */
export async function cosignSign(ref: string, key: KeyPair, flags: string[]): Promise<string> {
  return run([
    cosignPath(),
    "sign",
    "--yes",
    "--key",
    key.privateKey,
    "--allow-http-registry",
    "--allow-insecure-registry",
    ...flags,
    ref,
  ]);
}

/** `cosign verify --key`, as the alert tells a human to check; returns whether it verified. */
export async function cosignVerifies(ref: string, key: KeyPair): Promise<boolean> {
  try {
    await run([
      cosignPath(),
      "verify",
      "--key",
      key.publicKey,
      "--insecure-ignore-tlog=true",
      "--allow-http-registry",
      "--allow-insecure-registry",
      ref,
    ]);
    return true;
  } catch {
    return false;
  }
}

/** skopeo copy of one tag to another in the same registry (a signature copied under another digest's tag). */
export async function skopeoCopyTag(from: string, to: string): Promise<void> {
  await run([
    "skopeo",
    "copy",
    "--quiet",
    "--preserve-digests",
    "--src-tls-verify=false",
    "--dest-tls-verify=false",
    `docker://${from}`,
    `docker://${to}`,
  ]);
}
