// What the verifier reads from a registry, and the verdict it reaches. The reader is injected:
// the tick gives one over its registry HTTP layer (fetcher.ts), tests a map of answers.

/** GETs under `/v2/<repository>/` of one repository: `manifests/<ref>`, `blobs/<digest>`, `referrers/<digest>?…`. */
export interface RegistryReader {
  /** The answer, whatever its status; throws only when there is none (network, timeout). */
  get(path: string, accept: string): Promise<{ status: number; body: Uint8Array<ArrayBuffer> }>;
}

export type SignatureFormat = "simple-signing" | "bundle";

export type SignatureVerdict =
  /** A signature of the digest verifies with `key` (the key file's name). */
  | { status: "verified"; format: SignatureFormat; key: string; reason: string }
  /** No signature of the digest is there at all. */
  | { status: "unsigned"; reason: string }
  /** Signatures are there, and none verifies: another key, another digest, tampered, malformed. */
  | { status: "signature_invalid"; reason: string }
  /** The registry did not answer what was asked: nothing can be concluded this tick. */
  | { status: "unreadable"; reason: string };

/** A registry answer that prevents any conclusion (not a 404): the look-up is unreadable. */
export class Unreadable extends Error {
  override name = "Unreadable";
}

/** Something found that cannot be a valid signature of the digest: a reason for signature_invalid. */
export class Invalid extends Error {
  override name = "Invalid";
}

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
export const SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json";
export const SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature";
export const BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json";
