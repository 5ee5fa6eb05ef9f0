// Changes to the book and the one request that makes them. A change maps data keys to a value,
// or to null for a removal; the operations (reset, rearm, reject, record) take their key lists
// from the table in keys.ts, never from a list of their own.
import { type Book, bookData, parseBook } from "./book.ts";
import { type FieldKind, fieldsFor, IMAGE_KEYS, type ImageField } from "./keys.ts";
import { type Candidate, formatValue, type KindValue } from "./values.ts";

export type Change = Readonly<Record<string, string | null>>;

/** Later changes win a key that two of them write. */
export const merge = (...changes: Change[]): Change => Object.assign({}, ...changes);

export function setField<F extends ImageField>(
  key: string,
  field: F,
  value: KindValue[FieldKind<F>],
): Change {
  return { [IMAGE_KEYS[field].name(key)]: formatValue(IMAGE_KEYS[field].kind, value as never) };
}

/** Removes the fields of an image that are present; absent ones need no write. */
export function clearFields(book: Book, key: string, fields: readonly ImageField[]): Change {
  const image = book.images[key];
  const out: Record<string, null> = {};
  for (const f of fields) if (image && image[f].kind !== "absent") out[IMAGE_KEYS[f].name(key)] = null;
  return out;
}

/** After every workload of the image settled: counters, marker, failed digest, traceparent. */
export const reset = (book: Book, key: string): Change => clearFields(book, key, fieldsFor("reset"));

/** `rearm`: a fresh start; `removed` names what it cleared (empty: nothing to clear). */
export function rearm(book: Book, key: string): { change: Change; removed: ImageField[] } {
  const image = book.images[key];
  const removed = fieldsFor("rearm").filter((f) => image && image[f].kind !== "absent");
  return { change: clearFields(book, key, removed), removed };
}

/** `reject`: that digest never rolls out; the image is re-armed. */
export function reject(book: Book, key: string, digest: string): Change {
  const writes = fieldsFor("reject").map((f) => setField(key, f as "rejected", digest));
  return merge(rearm(book, key).change, ...writes);
}

/** A recorded digest, with the candidates still waiting (none: the key goes). */
export function record(key: string, digest: string, candidates: Candidate[] = []): Change {
  return merge(setField(key, "digest", digest), setField(key, "candidates", candidates));
}

/** The book as it will be once the change landed. */
export function applyChange(book: Book, change: Change): Book {
  const data = bookData(book);
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete data[k];
    else data[k] = v;
  }
  const store = { resourceVersion: book.resourceVersion ?? "", data };
  const next = parseBook(store, Object.keys(book.images));
  if (book.resourceVersion === undefined) delete next.resourceVersion;
  return next;
}

export type StoreWrite =
  | { kind: "none" }
  /** The store does not exist yet: a create is its own precondition. */
  | { kind: "create"; data: Record<string, string> }
  /** A merge patch of `data`, guarded by the resourceVersion it was decided on. */
  | { kind: "patch"; resourceVersion: string; data: Record<string, string | null> };

/** The one request that makes a change; none when it changes nothing. */
export function storeWrite(book: Book, change: Change): StoreWrite {
  const before = bookData(book);
  const effective: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(change)) if ((before[k] ?? null) !== v) effective[k] = v;
  if (Object.keys(effective).length === 0) return { kind: "none" };
  if (book.resourceVersion === undefined) {
    const data = bookData(applyChange(book, effective));
    return Object.keys(data).length === 0 ? { kind: "none" } : { kind: "create", data };
  }
  return { kind: "patch", resourceVersion: book.resourceVersion, data: effective };
}
