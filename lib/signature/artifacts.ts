// The registry objects a signature look-up reads: a manifest or index (by tag or by digest) and
// a blob, each checked against the digest that names it before anything in it is believed.
// Parsed by hand: a handful of fields is read, each checked for its type where it is read.
import { Invalid, type RegistryReader, Unreadable } from "./reader.ts";

const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;

export interface Descriptor {
  mediaType?: string;
  artifactType?: string;
  digest: string;
  size?: number;
  annotations?: Record<string, string>;
}

/** A manifest or index as far as a look-up reads it. */
export interface Manifest {
  mediaType?: string;
  artifactType?: string;
  subject?: Descriptor;
  layers: Descriptor[];
  manifests: Descriptor[];
}

export async function sha256Hex(data: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data)).toHex();
}

/** `sha256:<hex>` → `sha256-<hex>`: the tag schema of cosign's signatures and of the referrers fallback. */
export const digestTag = (digest: string) => digest.replace(":", "-");

/**
 * A manifest by tag or digest; undefined when the registry has none (404). Fetched by digest,
 * its bytes must hash to that digest.
 */
export async function readManifest(
  reader: RegistryReader,
  ref: string,
  accept: string,
): Promise<Manifest | undefined> {
  const res = await reader.get(`manifests/${ref}`, accept);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new Unreadable(`GET manifests/${ref} answered ${res.status}`);
  if (DIGEST_RE.test(ref) && `sha256:${await sha256Hex(res.body)}` !== ref)
    throw new Invalid(`the manifest ${ref} the registry served does not hash to its digest`);
  return parseManifest(res.body, `manifest ${ref}`);
}

export function parseManifest(body: Uint8Array<ArrayBuffer>, what: string): Manifest {
  const json = parseJson(body, what);
  const layers = descriptors(json.layers, `${what}: layers`);
  const manifests = descriptors(json.manifests, `${what}: manifests`);
  const subject = json.subject === undefined ? undefined : descriptor(json.subject, `${what}: subject`);
  return {
    mediaType: optionalString(json.mediaType),
    artifactType: optionalString(json.artifactType),
    ...(subject ? { subject } : {}),
    layers,
    manifests,
  };
}

/** A blob named by a descriptor: its bytes must hash to the descriptor's digest (and match its size). */
export async function readBlob(reader: RegistryReader, d: Descriptor): Promise<Uint8Array<ArrayBuffer>> {
  const res = await reader.get(`blobs/${d.digest}`, "*/*");
  if (res.status === 404) throw new Invalid(`blob ${d.digest} is missing from the registry`);
  if (res.status !== 200) throw new Unreadable(`GET blobs/${d.digest} answered ${res.status}`);
  if (`sha256:${await sha256Hex(res.body)}` !== d.digest)
    throw new Invalid(`blob ${d.digest} does not hash to its digest (tampered)`);
  if (d.size !== undefined && d.size !== res.body.length)
    throw new Invalid(`blob ${d.digest} is ${res.body.length} bytes, its descriptor says ${d.size}`);
  return res.body;
}

export function parseJson(body: Uint8Array<ArrayBuffer>, what: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw new Invalid(`${what} is not JSON`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new Invalid(`${what} is not a JSON object`);
  return json as Record<string, unknown>;
}

function descriptors(value: unknown, what: string): Descriptor[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new Invalid(`${what} is not a list`);
  return value.map((d, i) => descriptor(d, `${what}[${i}]`));
}

function descriptor(value: unknown, what: string): Descriptor {
  const d = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof d.digest !== "string" || !DIGEST_RE.test(d.digest))
    throw new Invalid(`${what}: digest is not sha256:<64 hex>`);
  const size = typeof d.size === "number" && Number.isSafeInteger(d.size) ? d.size : undefined;
  const annotations =
    typeof d.annotations === "object" && d.annotations !== null
      ? (d.annotations as Record<string, string>)
      : undefined;
  return {
    digest: d.digest,
    mediaType: optionalString(d.mediaType),
    artifactType: optionalString(d.artifactType),
    ...(size !== undefined ? { size } : {}),
    ...(annotations ? { annotations } : {}),
  };
}

const optionalString = (v: unknown) => (typeof v === "string" ? v : undefined);
