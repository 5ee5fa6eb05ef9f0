// The zod/mini layer every boundary parses with: paths as operators read them, English messages
// (zod/mini ships none by default), and the URL rule that keeps credentials out of logs.
import { describe, expect, test } from "bun:test";
import * as z from "zod/mini";
import { formatPath, matching, parse, urlWithoutCredentials } from "./issues.ts";

function lines(schema: z.ZodMiniType, value: unknown): string[] {
  const r = parse(schema, value);
  return r.ok ? [] : r.issues.map((i) => `${formatPath(i.path)}: ${i.message} (${i.code})`);
}

describe("formatPath", () => {
  const ROWS: Array<[PropertyKey[], string]> = [
    [[], "(root)"],
    [["tag"], "tag"],
    [[0], "[0]"],
    [["images", 0, "targets", 1, "kind"], "images[0].targets[1].kind"],
    [["a", "b"], "a.b"],
  ];
  test.each(ROWS)("%p is %p", (path, want) => expect(formatPath(path)).toBe(want));
});

describe("parse", () => {
  const schema = z.strictObject({
    images: z.array(z.strictObject({ kind: z.enum(["A", "B"]), n: z.optional(z.int()) })),
  });
  test("every issue with its path, in English", () => {
    expect(lines(schema, { images: [{ kind: "A" }, { kind: "C", n: 1.5 }], extra: 1 })).toEqual([
      'images[1].kind: Invalid option: expected one of "A"|"B" (invalid_value)',
      "images[1].n: Invalid input: expected int, received number (invalid_type)",
      '(root): Unrecognized key: "extra" (unrecognized_keys)',
    ]);
  });
  test("a valid value comes back typed", () => {
    expect(parse(schema, { images: [{ kind: "B" }] })).toEqual({
      ok: true,
      value: { images: [{ kind: "B" }] },
    });
  });
  test("a message never quotes the value (a secret must not reach an error)", () => {
    const got = lines(matching(/^[a-z]+$/, "must be lowercase"), "Secret-Token-123");
    expect(got).toEqual(["(root): must be lowercase (invalid_format)"]);
  });
  test("a record does not let __proto__ replace the result's prototype", () => {
    const r = parse(z.record(z.string(), z.int()), JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}'));
    expect(r.ok && Object.getPrototypeOf(r.value)).toBe(Object.prototype);
    expect(r.ok && (r.value as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("urlWithoutCredentials", () => {
  const url = urlWithoutCredentials("put them elsewhere");
  const ROWS: Array<[unknown, string[]]> = [
    ["https://r.example", []],
    ["http://r.example:5000/v2", []],
    ["ftp://r.example", ["(root): Invalid URL (custom)"]],
    ["https:", ["(root): Invalid URL (custom)"]],
    ["r.example", ["(root): Invalid URL (custom)"]],
    [
      "https://u:p@r.example",
      ["(root): must not contain a user name or password; put them elsewhere (custom)"],
    ],
    [
      "https://u@r.example",
      ["(root): must not contain a user name or password; put them elsewhere (custom)"],
    ],
    [5, ["(root): Invalid input: expected string, received number (invalid_type)"]],
  ];
  test.each(ROWS)("%p", (value, want) => expect(lines(url, value)).toEqual(want));
});
