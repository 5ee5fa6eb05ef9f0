import { describe, expect, test } from "bun:test";
import { bookData, parseBook } from "./book.ts";
import { applyChange, rearm, record, reject, reset, setField, storeWrite } from "./change.ts";
import { fieldsFor } from "./keys.ts";

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const store = (data: Record<string, string>) => ({ resourceVersion: "7", data });

describe("parseBook: each kind read once, untrusted text kept", () => {
  const cases: Array<{ name: string; data: Record<string, string>; field: string; want: unknown }> = [
    { name: "absent counter", data: {}, field: "attempt", want: { kind: "absent" } },
    {
      name: "trusted counter",
      data: { "refresh-attempt-api": "2" },
      field: "attempt",
      want: { kind: "trusted", value: 2, raw: "2" },
    },
    ...["", "-1", "1e3", " 2", "2 ", "0x1", "1234567890", "abc"].map((raw) => ({
      name: `untrusted counter ${JSON.stringify(raw)}`,
      data: { "refresh-attempt-api": raw },
      field: "attempt",
      want: { kind: "untrusted", raw },
    })),
    {
      name: "skip streak",
      data: { "skip-streak-api": "5" },
      field: "skip",
      want: { kind: "trusted", value: 5, raw: "5" },
    },
    {
      name: "digest",
      data: { "last-refreshed-api-digest": D1 },
      field: "digest",
      want: { kind: "trusted", value: D1, raw: D1 },
    },
    {
      name: "bad digest",
      data: { "failed-api-digest": "sha256:abc" },
      field: "failed",
      want: { kind: "untrusted", raw: "sha256:abc" },
    },
    {
      name: "marker: any text",
      data: { "refresh-flap-detected-api": "whatever" },
      field: "flap",
      want: { kind: "trusted", value: "whatever", raw: "whatever" },
    },
    {
      name: "candidates",
      data: { "candidates-api": `${D2}=2026-12-01T10:00:00Z,${D1}=2026-12-01T09:00:00Z` },
      field: "candidates",
      want: {
        kind: "trusted",
        value: [
          { digest: D2, seen: Date.parse("2026-12-01T10:00:00Z") },
          { digest: D1, seen: Date.parse("2026-12-01T09:00:00Z") },
        ],
        raw: `${D2}=2026-12-01T10:00:00Z,${D1}=2026-12-01T09:00:00Z`,
      },
    },
    {
      name: "candidates with a bad entry",
      data: { "candidates-api": `${D2}=yesterday` },
      field: "candidates",
      want: { kind: "untrusted", raw: `${D2}=yesterday` },
    },
    {
      name: "traceparent",
      data: { "refresh-attempt-traceparent-api": `00-${"a".repeat(32)}-${"b".repeat(16)}-01` },
      field: "traceparent",
      want: {
        kind: "trusted",
        value: `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
        raw: `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
      },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const book = parseBook(store(c.data), ["api", "web"]);
      expect((book.images.api as unknown as Record<string, unknown>)[c.field]).toEqual(c.want);
      expect(book.images.web?.attempt).toEqual({ kind: "absent" });
      expect(bookData(book)).toEqual(c.data);
    });

  test("the installation's retry time, and keys of no configured image kept aside", () => {
    const data = { "registry-retry-after": "2026-12-01T12:00:00Z", "refresh-attempt-gone": "3" };
    const book = parseBook(store(data), ["api"]);
    expect(book.installation.retryAfter).toEqual({
      kind: "trusted",
      value: Date.parse("2026-12-01T12:00:00Z"),
      raw: "2026-12-01T12:00:00Z",
    });
    expect(book.other).toEqual({ "refresh-attempt-gone": "3" });
    expect(book.resourceVersion).toBe("7");
  });

  test("NotFound is an empty book with no resourceVersion", () => {
    const book = parseBook(undefined, ["api"]);
    expect(book.resourceVersion).toBeUndefined();
    expect(bookData(book)).toEqual({});
  });
});

describe("the operations and the one write they make", () => {
  const full = {
    "last-refreshed-api-digest": D1,
    "refresh-attempt-api": "3",
    "refresh-flap-detected-api": "3",
    "failed-api-digest": D2,
    "refresh-attempt-traceparent-api": `00-${"a".repeat(32)}-${"b".repeat(16)}-01`,
    "skip-streak-api": "1",
    "unresolved-streak-api": "2",
    "repin-streak-api": "1",
    "rejected-api-digest": D2,
    "refresh-attempt-web": "1",
  };
  const book = parseBook(store(full), ["api", "web"]);
  const cases: Array<{
    name: string;
    change: Record<string, string | null>;
    want: Record<string, string | null>;
  }> = [
    {
      name: "reset: counter, marker, failed digest, traceparent",
      change: reset(book, "api"),
      want: {
        "refresh-attempt-api": null,
        "refresh-flap-detected-api": null,
        "failed-api-digest": null,
        "refresh-attempt-traceparent-api": null,
      },
    },
    {
      name: "rearm: also the repin streak and the rejection",
      change: rearm(book, "api").change,
      want: {
        "refresh-attempt-api": null,
        "refresh-flap-detected-api": null,
        "failed-api-digest": null,
        "refresh-attempt-traceparent-api": null,
        "repin-streak-api": null,
        "rejected-api-digest": null,
      },
    },
    {
      name: "reject: re-arms and stores the digest",
      change: reject(book, "api", D1),
      want: {
        "refresh-attempt-api": null,
        "refresh-flap-detected-api": null,
        "failed-api-digest": null,
        "refresh-attempt-traceparent-api": null,
        "repin-streak-api": null,
        "rejected-api-digest": D1,
      },
    },
    {
      name: "record: the digest, the candidates key removed",
      change: record("api", D2),
      want: { "last-refreshed-api-digest": D2 },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      expect(storeWrite(book, c.change)).toEqual({ kind: "patch", resourceVersion: "7", data: c.want });
    });

  test("rearm says what it removed; nothing to clear is no write", () => {
    expect(rearm(book, "api").removed).toEqual([
      "attempt",
      "flap",
      "failed",
      "traceparent",
      "repin",
      "rejected",
    ]);
    const clean = applyChange(book, rearm(book, "api").change);
    expect(rearm(clean, "api").removed).toEqual([]);
    expect(storeWrite(clean, rearm(clean, "api").change)).toEqual({ kind: "none" });
  });

  test("a missing store is created with the change; a change of nothing is no write", () => {
    const empty = parseBook(undefined, ["api"]);
    expect(storeWrite(empty, setField("api", "attempt", 1))).toEqual({
      kind: "create",
      data: { "refresh-attempt-api": "1" },
    });
    expect(storeWrite(empty, reset(empty, "api"))).toEqual({ kind: "none" });
    expect(storeWrite(empty, { "refresh-attempt-api": null })).toEqual({ kind: "none" });
  });

  test("the lists are the table's", () => {
    // adopt: an install adopted by a refresh that settled has nothing left to adopt.
    expect(fieldsFor("reset")).toEqual(["attempt", "flap", "failed", "traceparent", "adopt"]);
    expect(fieldsFor("rearm")).toEqual([
      "attempt",
      "flap",
      "failed",
      "traceparent",
      "repin",
      "rejected",
      "regressed",
    ]);
    expect(fieldsFor("migrate")).not.toContain("failed");
  });
});
