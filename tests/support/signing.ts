// Signatures made in tests with WebCrypto, in both of cosign's formats, and a registry that
// serves them from a map: what lib/signature's tables and the tick's tests sign builds with.
import { sha256Hex } from "../../lib/signature/artifacts.ts";
import { pae } from "../../lib/signature/dsse.ts";
import { type PublicKey, parsePublicKeys } from "../../lib/signature/keys.ts";
import type { RegistryReader } from "../../lib/signature/reader.ts";
import {
  BUNDLE_V03,
  OCI_INDEX,
  OCI_MANIFEST,
  SIGNATURE_ANNOTATION,
  SIMPLE_SIGNING,
} from "../../lib/signature/reader.ts";

const encoder = new TextEncoder();
export const bytes = (text: string) => encoder.encode(text) as Uint8Array<ArrayBuffer>;
export type Algorithm = "ecdsa-p256" | "ed25519" | "rsa";

export interface Signer {
  pem: string;
  sign(data: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>>;
  publicKey(name?: string): Promise<PublicKey>;
}

const GENERATE = {
  "ecdsa-p256": { name: "ECDSA", namedCurve: "P-256" },
  ed25519: { name: "Ed25519" },
  rsa: {
    name: "RSASSA-PKCS1-v1_5",
    modulusLength: 2048,
    publicExponent: new Uint8Array([1, 0, 1]),
    hash: "SHA-256",
  },
} as const;

export async function signer(algorithm: Algorithm = "ecdsa-p256"): Promise<Signer> {
  const pair = (await crypto.subtle.generateKey(GENERATE[algorithm], true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  const pem = `-----BEGIN PUBLIC KEY-----\n${spki.toBase64().replace(/.{64}/g, "$&\n")}\n-----END PUBLIC KEY-----\n`;
  const params =
    algorithm === "ecdsa-p256" ? { name: "ECDSA", hash: "SHA-256" } : { name: GENERATE[algorithm].name };
  return {
    pem,
    async sign(data) {
      const sig = new Uint8Array(await crypto.subtle.sign(params, pair.privateKey, data));
      // WebCrypto signs ECDSA as r || s; cosign writes ASN.1 DER.
      return algorithm === "ecdsa-p256" ? rawToDer(sig) : sig;
    },
    async publicKey(name = "release.pub") {
      return (await parsePublicKeys(pem, name))[0] as PublicKey;
    },
  };
}

/** r || s → DER SEQUENCE { INTEGER r, INTEGER s } (test side only). */
export function rawToDer(raw: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> {
  const int = (b: Uint8Array) => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    const v = b.subarray(i);
    const body = (v[0] as number) & 0x80 ? [0, ...v] : [...v];
    return [0x02, body.length, ...body];
  };
  const half = raw.length / 2;
  const seq = [...int(raw.subarray(0, half)), ...int(raw.subarray(half))];
  return new Uint8Array([0x30, seq.length, ...seq]);
}

/** A registry as a map from `/v2/<repo>/`-relative path to its answer; it records each GET. */
export class MapRegistry implements RegistryReader {
  readonly answers = new Map<string, { status: number; body: Uint8Array<ArrayBuffer> }>();
  readonly requests: string[] = [];
  async get(path: string): Promise<{ status: number; body: Uint8Array<ArrayBuffer> }> {
    this.requests.push(path);
    return this.answers.get(path) ?? { status: 404, body: bytes('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}') };
  }
  put(path: string, body: Uint8Array<ArrayBuffer> | string, status = 200): void {
    this.answers.set(path, { status, body: typeof body === "string" ? bytes(body) : body });
  }
  /** Stores a blob; returns its descriptor. */
  async blob(
    body: Uint8Array<ArrayBuffer>,
    mediaType: string,
  ): Promise<{ mediaType: string; digest: string; size: number }> {
    const digest = `sha256:${await sha256Hex(body)}`;
    this.put(`blobs/${digest}`, body);
    return { mediaType, digest, size: body.length };
  }
  /** Stores a manifest by digest (and by `tag` when given); returns its digest. */
  async manifest(json: unknown, tag?: string): Promise<string> {
    const body = bytes(JSON.stringify(json));
    const digest = `sha256:${await sha256Hex(body)}`;
    this.put(`manifests/${digest}`, body);
    if (tag) this.put(`manifests/${tag}`, body);
    return digest;
  }
}

export const tagOf = (digest: string) => digest.replace(":", "-");

export function simplePayload(digest: string, reference = "registry.example/app"): string {
  return JSON.stringify({
    critical: {
      identity: { "docker-reference": reference },
      image: { "docker-manifest-digest": digest },
      type: "cosign container image signature",
    },
    optional: null,
  });
}

/** cosign's `.sig` tag for `digest`, its layer signed by `by` over `payload` (default: the digest's own). */
export async function putSimpleSignature(
  reg: MapRegistry,
  digest: string,
  by: Signer,
  opts: { payload?: string; signature?: string } = {},
): Promise<void> {
  const payload = bytes(opts.payload ?? simplePayload(digest));
  const layer = await reg.blob(payload, SIMPLE_SIGNING);
  const signature = opts.signature ?? (await by.sign(payload)).toBase64();
  const config = await reg.blob(bytes("{}"), "application/vnd.oci.image.config.v1+json");
  await reg.manifest(
    {
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config,
      layers: [{ ...layer, annotations: { [SIGNATURE_ANNOTATION]: signature } }],
    },
    `${tagOf(digest)}.sig`,
  );
}

export function statement(digest: string): string {
  return JSON.stringify({
    _type: "https://in-toto.io/Statement/v1",
    subject: [{ name: "registry.example/app", digest: { sha256: digest.slice("sha256:".length) } }],
    predicateType: "https://sigstore.dev/cosign/sign/v1",
    predicate: {},
  });
}

/**
 * A sigstore bundle for `digest` as an OCI 1.1 referrer, listed by the referrers API or (with
 * `fallback`) under the `sha256-<hex>` tag. `signPae: false` signs the bare payload instead.
 */
export async function putBundle(
  reg: MapRegistry,
  digest: string,
  by: Signer,
  opts: { statementFor?: string; fallback?: boolean; signPae?: boolean } = {},
): Promise<void> {
  const payload = bytes(statement(opts.statementFor ?? digest));
  const type = "application/vnd.in-toto+json";
  const sig = await by.sign(opts.signPae === false ? payload : pae(type, payload));
  const bundle = {
    mediaType: BUNDLE_V03,
    verificationMaterial: { publicKey: { hint: "test" } },
    dsseEnvelope: { payload: payload.toBase64(), payloadType: type, signatures: [{ sig: sig.toBase64() }] },
  };
  const layer = await reg.blob(bytes(JSON.stringify(bundle)), BUNDLE_V03);
  const empty = await reg.blob(bytes("{}"), "application/vnd.oci.empty.v1+json");
  const subject = { mediaType: OCI_MANIFEST, digest, size: 100 };
  const m = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: BUNDLE_V03,
    config: empty,
    layers: [layer],
    subject,
  };
  const mDigest = await reg.manifest(m);
  const size = bytes(JSON.stringify(m)).length;
  const index = {
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: [{ mediaType: OCI_MANIFEST, artifactType: BUNDLE_V03, digest: mDigest, size }],
  };
  if (opts.fallback) await reg.manifest(index, tagOf(digest));
  else reg.put(`referrers/${digest}?artifactType=${encodeURIComponent(BUNDLE_V03)}`, JSON.stringify(index));
}
