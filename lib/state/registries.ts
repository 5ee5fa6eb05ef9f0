// Each registry's own keys in the store, one pair per registry host: the time before which it
// asked not to be called again (a 429's Retry-After) and its answer to GET /v2/ (so that the next
// tick need not ask). One registry's quota is never another's, so neither is one installation's.
//
// The version before kept one pair for its one registry, without a host (`registry-retry-after`,
// `registry-challenge`: the book's `installation`). They are read as before, as the top-level
// registry's, while that registry has no keys of its own; the next write of the store moves them
// to the host's keys (registryMigration).
import { INSTALLATION_KEYS, type KeyRow } from "./keys.ts";
import { type Field, type KindValue, parseValue } from "./values.ts";

export type RegistryField = "retryAfter" | "challenge";

/** ConfigMap data keys are at most 253 characters; a host's segment stays well inside that. */
const MAX_SEGMENT = 200;

/**
 * The host as a data key's last segment: lower case (Docker Hub's names as `docker.io`), the
 * port's `:` as `_` (not allowed in a key). A host too long for a key keeps its start and a hash.
 */
export function hostSegment(hostKey: string): string {
  const text = hostKey.toLowerCase().replace(/:/g, "_");
  if (text.length <= MAX_SEGMENT) return text;
  const hash = new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 16);
  return `${text.slice(0, MAX_SEGMENT - 17)}-${hash}`;
}

export const REGISTRY_KEYS = {
  retryAfter: {
    name: (host) => `registry-retry-after-${hostSegment(host)}`,
    kind: "time",
    ops: [],
    meaning: "the time before which the registry on this host asked not to be called again",
  },
  challenge: {
    name: (host) => `registry-challenge-${hostSegment(host)}`,
    kind: "marker",
    ops: [],
    meaning: "the answer of the registry on this host to GET /v2/ (open, or its challenge)",
  },
} as const satisfies Record<RegistryField, KeyRow>;

const FIELDS = Object.keys(REGISTRY_KEYS) as RegistryField[];
const PREFIXES = FIELDS.map((f) => [f, REGISTRY_KEYS[f].name("")] as const);

export type RegistryBook = {
  [F in RegistryField]: Field<KindValue[(typeof REGISTRY_KEYS)[F]["kind"]]>;
};

/**
 * The part of the book (book.ts) the registry keys live in: each host's own, and the one pair the
 * version before kept. Named here so that this file need not import the book that imports it.
 */
export type StoredRegistries = {
  registries: Record<string, RegistryBook>;
  installation: RegistryBook;
};

/** The store's per-host registry keys, by host segment; the data key names them all. */
export function parseRegistries(
  data: Record<string, string>,
  known: Set<string>,
): Record<string, RegistryBook> {
  const out: Record<string, Partial<Record<RegistryField, unknown>>> = {};
  for (const [name, raw] of Object.entries(data))
    for (const [f, prefix] of PREFIXES) {
      if (!name.startsWith(prefix) || name.length === prefix.length) continue;
      const segment = name.slice(prefix.length);
      out[segment] ??= {};
      (out[segment] as Record<RegistryField, unknown>)[f] = parseValue(REGISTRY_KEYS[f].kind, raw);
      known.add(name);
    }
  const absent = { kind: "absent" } as const;
  return Object.fromEntries(
    Object.entries(out).map(([s, b]) => [s, { retryAfter: absent, challenge: absent, ...b } as RegistryBook]),
  );
}

/** The per-host keys as ConfigMap data again, exactly as read. */
export function registriesData(registries: Record<string, RegistryBook>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [segment, b] of Object.entries(registries))
    for (const [f, prefix] of PREFIXES) {
      const v = b[f];
      if (v.kind !== "absent") out[`${prefix}${segment}`] = v.raw;
    }
  return out;
}

/**
 * What the store holds for one registry host. The top-level registry's (`legacyOwner`) falls back,
 * field by field, to the keys the version before kept for its one registry.
 */
export function registryBook(book: StoredRegistries, hostKey: string, legacyOwner: boolean): RegistryBook {
  const own = book.registries[hostSegment(hostKey)];
  const out = {} as Record<RegistryField, unknown>;
  for (const f of FIELDS) {
    const mine = own?.[f] ?? { kind: "absent" };
    out[f] = mine.kind === "absent" && legacyOwner ? book.installation[f] : mine;
  }
  return out as RegistryBook;
}

/**
 * The move of the version before's keys to the top-level registry's own: its keys take the old
 * values (where they have none) and the old keys go. Empty when there is nothing to move.
 */
export function registryMigration(book: StoredRegistries, topHostKey: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  const own = book.registries[hostSegment(topHostKey)];
  for (const f of FIELDS) {
    const old = book.installation[f] as Field<unknown>;
    if (old.kind === "absent") continue;
    out[INSTALLATION_KEYS[f].name()] = null;
    if ((own?.[f]?.kind ?? "absent") === "absent") out[REGISTRY_KEYS[f].name(topHostKey)] = old.raw;
  }
  return out;
}
