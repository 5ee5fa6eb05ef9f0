// A build's signature, found and verified as `cosign verify --key` checks it without a
// transparency log: the simple-signing `.sig` tag first (one request when it verifies), then the
// sigstore bundle among the digest's referrers. Any signature that verifies with one of the keys
// and names this exact digest is enough; with none found the build is unsigned; with some found
// and none good, signature_invalid, with why each does not count.
import { bundleSignatures } from "./bundle.ts";
import type { Checked } from "./checked.ts";
import type { PublicKey } from "./keys.ts";
import {
  Invalid,
  type RegistryReader,
  type SignatureFormat,
  type SignatureVerdict,
  Unreadable,
} from "./reader.ts";
import { simpleSignatures } from "./simple-signing.ts";

const LOOKUPS: [SignatureFormat, typeof simpleSignatures][] = [
  ["simple-signing", simpleSignatures],
  ["bundle", bundleSignatures],
];

export async function verifySignature(
  reader: RegistryReader,
  digest: string,
  keys: readonly PublicKey[],
): Promise<SignatureVerdict> {
  if (keys.length === 0) throw new Error("Cannot verify a signature: no public keys given");
  const problems: string[] = [];
  let found = false;
  for (const [format, lookup] of LOOKUPS) {
    let checked: Checked | undefined;
    try {
      checked = await lookup(reader, digest, keys);
    } catch (err) {
      if (err instanceof Invalid) checked = { problems: [err.message] };
      else return { status: "unreadable", reason: unreadable(err) };
    }
    if (!checked) continue;
    found = true;
    if (checked.verifiedBy)
      return {
        status: "verified",
        format,
        key: checked.verifiedBy,
        reason: `${format} signature verifies with ${checked.verifiedBy}`,
      };
    problems.push(...checked.problems.map((p) => `${format}: ${p}`));
  }
  if (!found)
    return {
      status: "unsigned",
      reason: `no signature of ${digest} (neither a .sig tag nor a sigstore bundle referrer)`,
    };
  return { status: "signature_invalid", reason: problems.join("; ") };
}

function unreadable(err: unknown): string {
  if (err instanceof Unreadable) return err.message;
  return `the registry could not be read: ${(err as Error)?.message ?? String(err)}`;
}
