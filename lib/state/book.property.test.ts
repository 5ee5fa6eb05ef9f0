// Properties of the book over random stores: it round-trips, and each operation touches exactly
// the keys its lifecycle in keys.ts names (every other key of the store is left as it was).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { type Book, bookData, parseBook } from "./book.ts";
import { applyChange, type Change, rearm, record, reject, reset, storeWrite } from "./change.ts";
import { fieldsFor, IMAGE_FIELDS, IMAGE_KEYS, type ImageField, INSTALLATION_KEYS } from "./keys.ts";

const KEYS = ["api", "web", "a-b"];
const digestArb = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`);
const valueArb = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.nat({ max: 99 }).map(String),
  digestArb,
  fc.constant("2026-12-01T12:00:00Z"),
  digestArb.map((d) => `${d}=2026-12-01T12:00:00Z`),
);
const nameArb = fc.oneof(
  fc.tuple(fc.constantFrom(...IMAGE_FIELDS), fc.constantFrom(...KEYS)).map(([f, k]) => IMAGE_KEYS[f].name(k)),
  fc.constant(INSTALLATION_KEYS.retryAfter.name()),
  fc.stringMatching(/^[a-z][a-z0-9.-]{0,20}$/),
);
const dataArb = fc.dictionary(nameArb, valueArb, { maxKeys: 20 });
const bookArb = fc
  .tuple(dataArb, fc.boolean())
  .map(([data, exists]): Book => parseBook(exists ? { resourceVersion: "42", data } : undefined, KEYS));

/** Every raw value of the book, by data key. */
const raw = (b: Book) => bookData(b);

function untouchedExcept(before: Book, after: Book, key: string, fields: readonly ImageField[]) {
  const skip = new Set(fields.map((f) => IMAGE_KEYS[f].name(key)));
  const a = raw(before);
  const b = raw(after);
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (!skip.has(k)) expect(b[k]).toBe(a[k]);
}

/** The change as the API server would apply it: through the one write it becomes. */
function landed(book: Book, change: Change): Book {
  const w = storeWrite(book, change);
  if (w.kind === "none") return book;
  const data = w.kind === "create" ? w.data : { ...raw(book) };
  if (w.kind === "patch")
    for (const [k, v] of Object.entries(w.data)) {
      if (v === null) delete data[k];
      else data[k] = v;
    }
  return parseBook({ resourceVersion: "43", data }, KEYS);
}

describe("the book", () => {
  test("round-trips: data -> book -> data", () => {
    fc.assert(
      fc.property(dataArb, (data) => {
        expect(bookData(parseBook({ resourceVersion: "1", data }, KEYS))).toEqual(data);
      }),
    );
  });

  test("a change through its one write lands as applyChange says", () => {
    fc.assert(
      fc.property(bookArb, fc.dictionary(nameArb, fc.option(valueArb)), (book, change) => {
        expect(raw(landed(book, change))).toEqual(raw(applyChange(book, change)));
      }),
    );
  });
});

describe("every key's lifecycle is honoured", () => {
  const key = fc.constantFrom(...KEYS);
  for (const op of ["reset", "rearm"] as const)
    test(`${op} removes exactly its keys of that image`, () => {
      fc.assert(
        fc.property(bookArb, key, (book, k) => {
          const change = op === "reset" ? reset(book, k) : rearm(book, k).change;
          const after = landed(book, change);
          for (const f of fieldsFor(op)) expect(after.images[k]?.[f].kind).toBe("absent");
          untouchedExcept(book, after, k, fieldsFor(op));
        }),
      );
    });

  test("reject stores the digest, re-arms, and touches nothing else", () => {
    fc.assert(
      fc.property(bookArb, key, digestArb, (book, k, d) => {
        const after = landed(book, reject(book, k, d));
        expect(raw(after)[IMAGE_KEYS.rejected.name(k)]).toBe(d);
        for (const f of fieldsFor("rearm"))
          if (f !== "rejected") expect(after.images[k]?.[f].kind).toBe("absent");
        untouchedExcept(book, after, k, [...fieldsFor("rearm"), ...fieldsFor("reject")]);
      }),
    );
  });

  test("record writes the digest and the candidates, nothing else", () => {
    fc.assert(
      fc.property(bookArb, key, digestArb, (book, k, d) => {
        const after = landed(book, record(k, d));
        expect(after.images[k]?.digest).toEqual({ kind: "trusted", value: d, raw: d });
        expect(after.images[k]?.candidates.kind).toBe("absent");
        untouchedExcept(book, after, k, fieldsFor("record"));
      }),
    );
  });
});
