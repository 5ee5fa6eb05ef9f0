// The sigstore bundle (v0.3) of cosign's newer format: an OCI 1.1 artifact whose subject is the
// signed image, found through the referrers API or, where a registry has none, its tag fallback
// (the `sha256-<hex>` tag holding an index of the referrers). The bundle's DSSE envelope signs
// an in-toto statement whose subject carries the signed digest.
import {
  type Descriptor,
  digestTag,
  type Manifest,
  parseJson,
  parseManifest,
  readBlob,
  readManifest,
} from "./artifacts.ts";
import { type Checked, checkEach } from "./checked.ts";
import { pae } from "./dsse.ts";
import type { PublicKey } from "./keys.ts";
import { BUNDLE_V03, Invalid, OCI_INDEX, OCI_MANIFEST, type RegistryReader, Unreadable } from "./reader.ts";
import { keyThatVerifies } from "./simple-signing.ts";

const IN_TOTO = "application/vnd.in-toto+json";
const STATEMENTS = ["https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1"];
/** Answers that say a registry has no referrers API: use the tag fallback. */
const NO_REFERRERS_API = [400, 404, 405, 501];

/** The bundles that name `digest` as their subject, each checked; undefined when there are none. */
export async function bundleSignatures(
  reader: RegistryReader,
  digest: string,
  keys: readonly PublicKey[],
): Promise<Checked | undefined> {
  const index = await referrers(reader, digest);
  const found = index?.manifests.filter((d) => d.artifactType === BUNDLE_V03) ?? [];
  if (found.length === 0) return undefined;
  return checkEach(found, (d) => checkReferrer(reader, d, { digest, keys }));
}

/** The referrers index: from the API, else from the tag fallback; undefined when neither has one. */
async function referrers(reader: RegistryReader, digest: string): Promise<Manifest | undefined> {
  const path = `referrers/${digest}?artifactType=${encodeURIComponent(BUNDLE_V03)}`;
  const res = await reader.get(path, OCI_INDEX);
  if (res.status === 200) return parseManifest(res.body, `the referrers of ${digest}`);
  if (!NO_REFERRERS_API.includes(res.status)) throw new Unreadable(`GET ${path} answered ${res.status}`);
  return readManifest(reader, digestTag(digest), OCI_INDEX);
}

async function checkReferrer(
  reader: RegistryReader,
  d: Descriptor,
  opts: { digest: string; keys: readonly PublicKey[] },
): Promise<string> {
  const manifest = await readManifest(reader, d.digest, OCI_MANIFEST);
  if (!manifest) throw new Invalid(`referrer ${d.digest} is listed but missing`);
  const layer = manifest.layers.find((l) => l.mediaType === BUNDLE_V03);
  if (!layer) throw new Invalid(`referrer ${d.digest} holds no ${BUNDLE_V03} layer`);
  const bundle = parseJson(await readBlob(reader, layer), `bundle ${layer.digest}`);
  return checkEnvelope(bundle, opts);
}

/** A bundle's DSSE envelope: a signature that verifies, over a statement naming the digest. */
export async function checkEnvelope(
  bundle: Record<string, unknown>,
  opts: { digest: string; keys: readonly PublicKey[] },
): Promise<string> {
  const env = bundle.dsseEnvelope as Record<string, unknown> | undefined;
  if (typeof env !== "object" || env === null) throw new Invalid("the bundle has no DSSE envelope");
  const { payloadType, payload, signatures } = env;
  if (payloadType !== IN_TOTO) throw new Invalid(`the envelope's payloadType is not ${IN_TOTO}`);
  const body = base64(payload, "the envelope's payload");
  const signed = pae(payloadType, body);
  const sigs = Array.isArray(signatures) ? signatures : [];
  for (const s of sigs) {
    const sig = base64((s as { sig?: unknown })?.sig, "an envelope signature");
    const key = await keyThatVerifies(opts.keys, sig, signed);
    if (!key) continue;
    const subjects = statementDigests(parseJson(body, "the in-toto statement"));
    if (!subjects.includes(opts.digest))
      throw new Invalid(
        `it is signed for another digest (${subjects.join(", ") || "none"}), not ${opts.digest}`,
      );
    return key.name;
  }
  throw new Invalid("its signature verifies with none of the configured keys (another key, or tampered)");
}

function statementDigests(statement: Record<string, unknown>): string[] {
  if (!STATEMENTS.includes(statement._type as string))
    throw new Invalid("the payload is not an in-toto statement");
  const subject = Array.isArray(statement.subject) ? statement.subject : [];
  return subject
    .map((s) => (s as { digest?: { sha256?: unknown } })?.digest?.sha256)
    .filter((h): h is string => typeof h === "string")
    .map((h) => `sha256:${h}`);
}

function base64(value: unknown, what: string): Uint8Array<ArrayBuffer> {
  if (typeof value !== "string" || value === "") throw new Invalid(`${what} is missing`);
  try {
    return Uint8Array.fromBase64(value);
  } catch {
    throw new Invalid(`${what} is not base64`);
  }
}
