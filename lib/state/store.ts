// The store on the wire: one GET gives the book and the tick's clock (the API server's `Date`:
// nodes' clocks differ, the API server's is one); one request makes a change. A create is its
// own precondition and a patch carries the resourceVersion it was decided on, so a concurrent
// tick's write is never overwritten: AlreadyExists or Conflict comes back as `conflict`, and the
// caller re-reads and decides again. Every other failure is the ApiError, reason and message kept.
import type { ConfigMapApi, ConfigMapRef } from "../kube/configmaps.ts";
import { ApiError } from "../kube/errors.ts";
import { type Book, parseBook } from "./book.ts";
import { type Change, storeWrite } from "./change.ts";

export interface StoreRead {
  book: Book;
  /** The answer's `Date` header as sent (null when there is none): the tick's clock. */
  date: string | null;
}

export async function readStore(
  api: ConfigMapApi,
  ref: ConfigMapRef,
  imageKeys: readonly string[],
): Promise<StoreRead> {
  const { object, date } = await api.read(ref);
  return { book: parseBook(object, imageKeys), date };
}

export type WriteResult =
  | { kind: "unchanged" }
  | { kind: "written"; book: Book }
  /** Another tick wrote first: re-read and decide again. */
  | { kind: "conflict"; reason: "AlreadyExists" | "Conflict"; message: string };

export async function writeStore(
  api: ConfigMapApi,
  ref: ConfigMapRef,
  book: Book,
  change: Change,
): Promise<WriteResult> {
  const w = storeWrite(book, change);
  if (w.kind === "none") return { kind: "unchanged" };
  const keys = Object.keys(book.images);
  try {
    const saved =
      w.kind === "create" ? await api.create(ref, w.data) : await api.patch(ref, w.resourceVersion, w.data);
    return { kind: "written", book: parseBook(saved, keys) };
  } catch (e) {
    if (e instanceof ApiError && e.code === 409 && (e.reason === "AlreadyExists" || e.reason === "Conflict"))
      return { kind: "conflict", reason: e.reason, message: e.message };
    throw e;
  }
}
