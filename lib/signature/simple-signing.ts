// cosign's first format: the `sha256-<hex>.sig` tag of the signed image's repository holds a
// manifest whose layers are simple-signing payloads (a JSON document naming the signed digest),
// each with its signature (base64) in the layer annotation dev.cosignproject.cosign/signature.
// skopeo writes the same tag when registries.d says use-sigstore-attachments: true.
import { type Descriptor, digestTag, parseJson, readBlob, readManifest } from "./artifacts.ts";
import { type Checked, checkEach } from "./checked.ts";
import { type PublicKey, verifies } from "./keys.ts";
import {
  Invalid,
  OCI_MANIFEST,
  type RegistryReader,
  SIGNATURE_ANNOTATION,
  SIMPLE_SIGNING,
} from "./reader.ts";

const SIMPLE_SIGNING_TYPE = "cosign container image signature";
const ACCEPT = `${OCI_MANIFEST}, application/vnd.docker.distribution.manifest.v2+json`;

/** The signatures under the `.sig` tag, each checked; undefined when the tag is not there. */
export async function simpleSignatures(
  reader: RegistryReader,
  digest: string,
  keys: readonly PublicKey[],
): Promise<Checked | undefined> {
  const manifest = await readManifest(reader, `${digestTag(digest)}.sig`, ACCEPT);
  if (!manifest) return undefined;
  const layers = manifest.layers.filter((l) => l.mediaType === SIMPLE_SIGNING);
  if (layers.length === 0) return { problems: [`${digestTag(digest)}.sig holds no simple-signing layer`] };
  return checkEach(layers, (layer) => checkLayer(reader, layer, { digest, keys }));
}

/** One layer: the key it verifies with, or an Invalid saying why it does not count. */
async function checkLayer(
  reader: RegistryReader,
  layer: Descriptor,
  opts: { digest: string; keys: readonly PublicKey[] },
): Promise<string> {
  const encoded = layer.annotations?.[SIGNATURE_ANNOTATION];
  if (typeof encoded !== "string" || encoded === "")
    throw new Invalid(`layer ${layer.digest} has no ${SIGNATURE_ANNOTATION} annotation`);
  let signature: Uint8Array<ArrayBuffer>;
  try {
    signature = Uint8Array.fromBase64(encoded);
  } catch {
    throw new Invalid(`layer ${layer.digest}: the signature is not base64`);
  }
  const payload = await readBlob(reader, layer);
  const key = await keyThatVerifies(opts.keys, signature, payload);
  if (!key)
    throw new Invalid("its signature verifies with none of the configured keys (another key, or tampered)");
  const named = signedDigest(payload);
  if (named !== opts.digest)
    throw new Invalid(`it is signed for another digest (${named}), not ${opts.digest}`);
  return key.name;
}

export async function keyThatVerifies(
  keys: readonly PublicKey[],
  signature: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>,
): Promise<PublicKey | undefined> {
  for (const key of keys) if (await verifies(key, signature, data)) return key;
  return undefined;
}

/** The digest a simple-signing payload names (critical.image.docker-manifest-digest). */
function signedDigest(payload: Uint8Array<ArrayBuffer>): string {
  const json = parseJson(payload, "the simple-signing payload");
  const critical = json.critical as { type?: unknown; image?: Record<string, unknown> } | undefined;
  if (critical?.type !== SIMPLE_SIGNING_TYPE)
    throw new Invalid(`the payload's critical.type is not "${SIMPLE_SIGNING_TYPE}"`);
  const named = critical.image?.["docker-manifest-digest"];
  if (typeof named !== "string")
    throw new Invalid("the payload names no critical.image.docker-manifest-digest");
  return named;
}
