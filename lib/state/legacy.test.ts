import { describe, expect, test } from "bun:test";
import { parseBook } from "./book.ts";
import { applyChange } from "./change.ts";
import { bookWithLegacy, type LegacyInput, migrationChange, removableAnnotations } from "./legacy.ts";

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const images = [
  { key: "api", onStateWorkload: true },
  { key: "agent", onStateWorkload: false },
];
const input = (annotations: Record<string, string>, prefix = "image-refresh.io"): LegacyInput => ({
  annotations,
  prefix,
  images,
});
const empty = parseBook(undefined, ["api", "agent"]);

describe("migrationChange: the legacy annotations as store writes", () => {
  const shell = {
    "tracebloc.io/last-refreshed-api-digest": D1,
    "tracebloc.io/last-refreshed-agent-digest": D2,
    "tracebloc.io/refresh-skip-streak": "2",
    "tracebloc.io/refresh-attempt": "3",
    "tracebloc.io/refresh-flap-detected": "3",
    "kubectl.kubernetes.io/last-applied-configuration": "{}",
    "deployment.kubernetes.io/revision": "4",
    "refresh-attempt": "9",
  };
  const cases: Array<{
    name: string;
    book?: typeof empty;
    ann: Record<string, string>;
    prefix?: string;
    want: Record<string, string>;
  }> = [
    {
      name: "the shell job's (any prefix): single counter for every image, skip streak for the state workload's",
      ann: shell,
      want: {
        "last-refreshed-api-digest": D1,
        "last-refreshed-agent-digest": D2,
        "skip-streak-api": "2",
        "refresh-attempt-api": "3",
        "refresh-attempt-agent": "3",
        "refresh-flap-detected-api": "3",
        "refresh-flap-detected-agent": "3",
      },
    },
    {
      name: "an image's own annotation wins over the single key",
      ann: { "image-refresh.io/refresh-attempt": "3", "image-refresh.io/refresh-attempt-api": "1" },
      want: { "refresh-attempt-api": "1", "refresh-attempt-agent": "3" },
    },
    {
      name: "the configured prefix wins a tie",
      ann: { "old.io/refresh-attempt-api": "2", "image-refresh.io/refresh-attempt-api": "1" },
      want: { "refresh-attempt-api": "1" },
    },
    {
      name: "the store wins once it holds an image's entries",
      book: parseBook({ resourceVersion: "5", data: { "last-refreshed-api-digest": D2 } }, ["api", "agent"]),
      ann: { "x.io/refresh-attempt": "3", "x.io/last-refreshed-api-digest": D1 },
      want: { "refresh-attempt-agent": "3" },
    },
    {
      name: "untrusted text is carried as it is (the tick holds on it)",
      ann: { "x.io/refresh-attempt-api": "three", "x.io/registry-retry-after": "2026-12-01T12:00:00.000Z" },
      want: { "refresh-attempt-api": "three", "registry-retry-after": "2026-12-01T12:00:00.000Z" },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      expect(migrationChange(c.book ?? empty, input(c.ann, c.prefix))).toEqual(c.want);
    });

  test("the book a tick decides on carries a legacy lockout", () => {
    const book = bookWithLegacy(empty, input(shell));
    expect(book.images.agent?.attempt).toEqual({ kind: "trusted", value: 3, raw: "3" });
    expect(book.images.agent?.skip).toEqual({ kind: "absent" });
    expect(book.images.api?.skip).toEqual({ kind: "trusted", value: 2, raw: "2" });
  });
});

describe("removableAnnotations: only what the store now holds", () => {
  const ann = {
    "tracebloc.io/refresh-attempt": "3",
    "tracebloc.io/last-refreshed-api-digest": D1,
    "tracebloc.io/registry-retry-after": "2026-12-01T12:00:00Z",
    "other.io/unrelated": "x",
  };
  test("after the migration write landed: every one of ours", () => {
    const landed = applyChange(empty, migrationChange(empty, input(ann)));
    const stored = { ...landed, resourceVersion: "9" };
    expect(removableAnnotations(stored, input(ann)).sort()).toEqual([
      "tracebloc.io/last-refreshed-api-digest",
      "tracebloc.io/refresh-attempt",
      "tracebloc.io/registry-retry-after",
    ]);
  });
  test("a single key stays while an image it counts for has nothing in the store", () => {
    const stored = parseBook({ resourceVersion: "9", data: { "refresh-attempt-api": "3" } }, [
      "api",
      "agent",
    ]);
    expect(removableAnnotations(stored, input(ann)).sort()).toEqual([
      "tracebloc.io/last-refreshed-api-digest",
      "tracebloc.io/registry-retry-after",
    ]);
  });
  test("nothing goes before the store exists", () => {
    expect(removableAnnotations(empty, input(ann))).toEqual([]);
  });
});
