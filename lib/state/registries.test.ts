import { describe, expect, test } from "bun:test";
import { bookData, parseBook } from "./book.ts";
import { hostSegment, REGISTRY_KEYS, registryBook, registryMigration } from "./registries.ts";

const store = (data: Record<string, string>) => ({ resourceVersion: "7", data });
const T1 = "2026-12-01T12:00:00Z";
const T2 = "2026-12-01T13:00:00Z";

describe("each registry host's keys", () => {
  test("a host's key: lower case, the port's ':' as '_' (a ConfigMap key has no ':')", () => {
    expect(REGISTRY_KEYS.retryAfter.name("Registry.Example.com:5000")).toBe(
      "registry-retry-after-registry.example.com_5000",
    );
    expect(REGISTRY_KEYS.challenge.name("ghcr.io")).toBe("registry-challenge-ghcr.io");
  });

  test("a host too long for a key keeps its start and a hash, within 253 characters, one per host", () => {
    const long = `${"a".repeat(240)}.example`;
    const other = `${"a".repeat(240)}.example2`;
    const key = REGISTRY_KEYS.challenge.name(long);
    expect(key.length).toBeLessThanOrEqual(253);
    expect(key).toMatch(/^[-._a-zA-Z0-9]+$/);
    expect(hostSegment(long)).not.toBe(hostSegment(other));
  });

  test("are parsed per host, kept as read, and not taken for other keys", () => {
    const data = {
      "registry-retry-after-ghcr.io": T1,
      "registry-challenge-127.0.0.1_5000": "https://127.0.0.1:5000 open",
      "registry-retry-after": T2,
      "refresh-attempt-gone": "3",
    };
    const book = parseBook(store(data), ["api"]);
    expect(book.registries["ghcr.io"]?.retryAfter).toEqual({
      kind: "trusted",
      value: Date.parse(T1),
      raw: T1,
    });
    expect(book.registries["ghcr.io"]?.challenge).toEqual({ kind: "absent" });
    expect(book.registries["127.0.0.1_5000"]?.challenge.kind).toBe("trusted");
    expect(book.installation.retryAfter.kind).toBe("trusted");
    expect(book.other).toEqual({ "refresh-attempt-gone": "3" });
    expect(bookData(book)).toEqual(data);
  });

  test("an unreadable time is kept as untrusted text", () => {
    const book = parseBook(store({ "registry-retry-after-ghcr.io": "soon" }), []);
    expect(book.registries["ghcr.io"]?.retryAfter).toEqual({ kind: "untrusted", raw: "soon" });
  });
});

describe("the keys the version before kept for its one registry", () => {
  const old = { "registry-retry-after": T1, "registry-challenge": "https://r.example open" };

  test("are the top-level registry's while it has none of its own, and never another host's", () => {
    const book = parseBook(store(old), []);
    expect(registryBook(book, "r.example", true).retryAfter.kind).toBe("trusted");
    expect(registryBook(book, "r.example", true).challenge).toMatchObject({ raw: "https://r.example open" });
    expect(registryBook(book, "ghcr.io", false).retryAfter.kind).toBe("absent");
    expect(registryBook(book, "ghcr.io", false).challenge.kind).toBe("absent");
  });

  test("a host's own key wins over the old one, field by field", () => {
    const book = parseBook(store({ ...old, "registry-retry-after-r.example": T2 }), []);
    const own = registryBook(book, "r.example", true);
    expect(own.retryAfter).toMatchObject({ raw: T2 });
    expect(own.challenge).toMatchObject({ raw: "https://r.example open" });
  });

  test("move to the top-level registry's keys: old keys removed, values kept where it has none", () => {
    expect(registryMigration(parseBook(store(old), []), "r.example")).toEqual({
      "registry-retry-after": null,
      "registry-retry-after-r.example": T1,
      "registry-challenge": null,
      "registry-challenge-r.example": "https://r.example open",
    });
    const both = parseBook(store({ ...old, "registry-retry-after-r.example": T2 }), []);
    expect(registryMigration(both, "r.example")).toEqual({
      "registry-retry-after": null,
      "registry-challenge": null,
      "registry-challenge-r.example": "https://r.example open",
    });
    expect(registryMigration(parseBook(store({}), []), "r.example")).toEqual({});
  });
});
