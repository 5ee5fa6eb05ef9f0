// The signature policy's public keys, read and imported once at start-up, before any request:
// a key file that is missing or is not a usable public key is a configuration error naming the
// field and the file (exit 2), not a surprise in the middle of a refresh.
import type { Config } from "../config.ts";
import { ConfigError } from "../config.ts";
import { type PublicKey, parsePublicKeys } from "./keys.ts";

/** Each image with a policy, by key: the public keys its builds must be signed with. */
export type PolicyKeys = Map<string, PublicKey[]>;

export async function loadPolicyKeys(
  config: Config,
  readFile: (path: string) => string,
): Promise<PolicyKeys> {
  const byPath = new Map<string, Promise<PublicKey[]>>();
  const fields = new Map<string, string>();
  for (const [i, p] of (config.verify?.keys ?? []).entries()) fields.set(p, `verify.keys[${i}]`);
  for (const [i, img] of config.images.entries()) {
    if (img.verify?.from !== "image") continue;
    for (const [j, p] of img.verify.keys.entries())
      if (!fields.has(p)) fields.set(p, `images[${i}].verify.keys[${j}]`);
  }
  const problems: string[] = [];
  const load = (path: string) => {
    let got = byPath.get(path);
    if (!got) {
      got = readKeys(path, readFile).catch((err: Error) => {
        problems.push(`${fields.get(path) ?? "verify.keys"}: ${err.message}`);
        return [];
      });
      byPath.set(path, got);
    }
    return got;
  };
  const out: PolicyKeys = new Map();
  for (const img of config.images) {
    if (!img.verify || img.pinned) continue;
    const keys = await Promise.all(img.verify.keys.map(load));
    out.set(img.key, keys.flat());
  }
  if (problems.length) throw new ConfigError("Invalid signature keys", [...new Set(problems)]);
  return out;
}

async function readKeys(path: string, readFile: (path: string) => string): Promise<PublicKey[]> {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`cannot read ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
  return parsePublicKeys(text, path);
}
