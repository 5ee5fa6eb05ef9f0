// Public keys for signature verification: PEM "PUBLIC KEY" blocks (SubjectPublicKeyInfo, what
// `cosign generate-key-pair`, `skopeo generate-sigstore-key` and `openssl pkey -pubout` write),
// imported into WebCrypto. The SPKI names its algorithm; rather than read its OID by hand, each
// algorithm cosign verifies with a key is tried in turn: WebCrypto refuses a key of another kind.
import { ecdsaDerToRaw } from "./der.ts";

export type KeyAlgorithm = "ecdsa-p256" | "ed25519" | "rsa";

export interface PublicKey {
  /** Where it came from (the file's path): what messages name. */
  name: string;
  algorithm: KeyAlgorithm;
  key: CryptoKey;
}

const IMPORTS: [KeyAlgorithm, Parameters<typeof crypto.subtle.importKey>[2]][] = [
  ["ecdsa-p256", { name: "ECDSA", namedCurve: "P-256" }],
  ["ed25519", { name: "Ed25519" }],
  // cosign's RSA keys sign PKCS#1 v1.5 with SHA-256.
  ["rsa", { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }],
];

const PEM_RE = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/g;

/** Every PUBLIC KEY block of a PEM text, imported; throws a sentence naming what is wrong. */
export async function parsePublicKeys(pem: string, name: string): Promise<PublicKey[]> {
  const blocks = [...pem.matchAll(PEM_RE)].map((m) => m[1] as string);
  if (blocks.length === 0) {
    const hint = /PRIVATE KEY/.test(pem) ? " (it holds a private key: give the public one)" : "";
    throw new Error(`${name} holds no PEM "PUBLIC KEY" block${hint}`);
  }
  const keys: PublicKey[] = [];
  for (const [i, b64] of blocks.entries()) {
    const label = blocks.length > 1 ? `${name} (key ${i + 1})` : name;
    keys.push(await importSpki(spkiBytes(b64, label), label));
  }
  return keys;
}

function spkiBytes(b64: string, name: string): Uint8Array<ArrayBuffer> {
  try {
    return Uint8Array.fromBase64(b64.replace(/\s+/g, ""));
  } catch {
    throw new Error(`${name}: the PUBLIC KEY block is not base64`);
  }
}

async function importSpki(spki: Uint8Array<ArrayBuffer>, name: string): Promise<PublicKey> {
  for (const [algorithm, params] of IMPORTS) {
    try {
      const key = await crypto.subtle.importKey("spki", spki, params, false, ["verify"]);
      return { name, algorithm, key };
    } catch {
      // Another algorithm's key, or not a key at all: the next import says which.
    }
  }
  throw new Error(`${name}: not an ECDSA P-256, Ed25519 or RSA public key`);
}

/**
 * Whether `signature` over `data` verifies with `key`, as cosign's verifiers check it: ECDSA
 * over SHA-256 with an ASN.1 DER signature, Ed25519 over the data itself, RSA PKCS#1 v1.5 over
 * SHA-256. A signature that is not even well-formed does not verify.
 */
export async function verifies(
  key: PublicKey,
  signature: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>,
): Promise<boolean> {
  if (key.algorithm === "ecdsa-p256") {
    const raw = ecdsaDerToRaw(signature);
    if (!raw) return false;
    return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key.key, raw, data);
  }
  const name = key.algorithm === "ed25519" ? "Ed25519" : "RSASSA-PKCS1-v1_5";
  return crypto.subtle.verify({ name }, key.key, signature, data).catch(() => false);
}
