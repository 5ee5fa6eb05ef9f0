// The book: the store's ConfigMap `data`, parsed once into typed fields per image. Inside the
// tick nobody rebuilds a key name or reads raw data; a change to the book is a set of key
// writes (a value, or null to remove) that `storeWrite` turns into one request.
import {
  type FieldKind,
  IMAGE_FIELDS,
  IMAGE_KEYS,
  type ImageField,
  INSTALLATION_FIELDS,
  INSTALLATION_KEYS,
  type InstallationField,
} from "./keys.ts";
import { parseRegistries, type RegistryBook, registriesData } from "./registries.ts";
import { type Field, type KindValue, parseValue } from "./values.ts";

export type ImageBook = { [F in ImageField]: Field<KindValue[FieldKind<F>]> };
export type InstallationBook = {
  [F in InstallationField]: Field<KindValue[(typeof INSTALLATION_KEYS)[F]["kind"]]>;
};

export interface Book {
  /** The store's resourceVersion; undefined while the ConfigMap does not exist. */
  resourceVersion?: string;
  images: Record<string, ImageBook>;
  /** The keys the version before kept for its one registry (registries.ts reads them as the top-level one's). */
  installation: InstallationBook;
  /** Each registry host's own keys, by host segment (registries.ts). */
  registries: Record<string, RegistryBook>;
  /** Data keys that belong to no configured image: kept as they are, never rewritten. */
  other: Record<string, string>;
}

/** What the API server answered for the store: undefined for NotFound. */
export interface StoreObject {
  resourceVersion: string;
  data: Record<string, string>;
}

export function imageBook(read: (f: ImageField) => string | undefined): ImageBook {
  const out = {} as Record<ImageField, unknown>;
  for (const f of IMAGE_FIELDS) out[f] = parseValue(IMAGE_KEYS[f].kind, read(f));
  return out as ImageBook;
}

/** Parses the store for the configured image keys; a missing store is an empty book. */
export function parseBook(store: StoreObject | undefined, imageKeys: readonly string[]): Book {
  const data = store?.data ?? {};
  const known = new Set<string>();
  const images: Record<string, ImageBook> = {};
  for (const key of imageKeys) {
    images[key] = imageBook((f) => {
      const name = IMAGE_KEYS[f].name(key);
      known.add(name);
      return data[name];
    });
  }
  const installation = {} as Record<InstallationField, unknown>;
  for (const f of INSTALLATION_FIELDS) {
    const row = INSTALLATION_KEYS[f];
    known.add(row.name());
    installation[f] = parseValue(row.kind, data[row.name()]);
  }
  const registries = parseRegistries(data, known);
  const other: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) if (!known.has(k)) other[k] = v;
  return {
    ...(store ? { resourceVersion: store.resourceVersion } : {}),
    images,
    installation: installation as InstallationBook,
    registries,
    other,
  };
}

/** The book as ConfigMap data again: what it read, with its changes. */
export function bookData(book: Book): Record<string, string> {
  const out: Record<string, string> = { ...book.other, ...registriesData(book.registries) };
  for (const [key, image] of Object.entries(book.images))
    for (const f of IMAGE_FIELDS) {
      const v = image[f];
      if (v.kind !== "absent") out[IMAGE_KEYS[f].name(key)] = v.raw;
    }
  for (const f of INSTALLATION_FIELDS) {
    const v = book.installation[f];
    if (v.kind !== "absent") out[INSTALLATION_KEYS[f].name()] = v.raw;
  }
  return out;
}

/** True when the store holds any entry of this image (then legacy annotations are ignored). */
export function hasEntries(image: ImageBook): boolean {
  return IMAGE_FIELDS.some((f) => image[f].kind !== "absent");
}

/** Each image's trusted attempt count (own or legacy), else 0: a count that went up means a claim. */
export function attemptCounts(book: Book, keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of keys) {
    const c = book.images[key]?.attempt;
    out[key] = c?.kind === "trusted" ? c.value : 0;
  }
  return out;
}
