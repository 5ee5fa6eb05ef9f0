import { describe, expect, test } from "bun:test";
import {
  array,
  atLeast,
  atMost,
  boolean,
  formatPath,
  integer,
  map,
  maxLength,
  minItems,
  minLength,
  nullish,
  object,
  oneOf,
  optional,
  parse,
  pattern,
  record,
  type Schema,
  strictObject,
  string,
  unknown,
  url,
  urlWithoutCredentials,
  withDefault,
} from "./schema.ts";

/** "path: message (code)" for each issue, or the value when it passes. */
function run<T>(schema: Schema<T>, value: unknown): { value: T } | { issues: string[] } {
  const r = parse(schema, value);
  return r.ok
    ? { value: r.value }
    : { issues: r.issues.map((i) => `${formatPath(i.path)}: ${i.message} (${i.code})`) };
}

const ok = (value: unknown) => ({ value }) as { value: never };
const bad = (...issues: string[]) => ({ issues });

describe("scalars", () => {
  const ROWS: Array<[string, Schema<unknown>, unknown, ReturnType<typeof run>]> = [
    ["a string", string(), "x", ok("x")],
    [
      "a number for a string",
      string(),
      1,
      bad("(root): Invalid input: expected string, received number (invalid_type)"),
    ],
    [
      "an absent string",
      string(),
      undefined,
      bad("(root): Invalid input: expected string, received undefined (invalid_type)"),
    ],
    [
      "null for a string",
      string(),
      null,
      bad("(root): Invalid input: expected string, received null (invalid_type)"),
    ],
    [
      "an array for a string",
      string(),
      [],
      bad("(root): Invalid input: expected string, received array (invalid_type)"),
    ],
    ["at the max length", string(maxLength(3)), "abc", ok("abc")],
    [
      "over the max length",
      string(maxLength(3)),
      "abcd",
      bad("(root): Too big: expected string to have <=3 characters (too_big)"),
    ],
    ["at the min length", string(minLength(1)), "a", ok("a")],
    [
      "under the min length",
      string(minLength(1)),
      "",
      bad("(root): Too small: expected string to have >=1 characters (too_small)"),
    ],
    [
      "under the min length, own message",
      string(minLength(1, "is not set")),
      "",
      bad("(root): is not set (too_small)"),
    ],
    ["matching a pattern", string(pattern(/^a+$/, "only a")), "aa", ok("aa")],
    [
      "not matching a pattern",
      string(pattern(/^a+$/, "only a")),
      "ab",
      bad("(root): only a (invalid_format)"),
    ],
    [
      "every failing rule is reported",
      string(maxLength(1), pattern(/^a+$/, "only a")),
      "bb",
      bad(
        "(root): Too big: expected string to have <=1 characters (too_big)",
        "(root): only a (invalid_format)",
      ),
    ],
    ["an integer", integer(), 3, ok(3)],
    ["zero", integer(), 0, ok(0)],
    [
      "a fraction",
      integer(),
      1.5,
      bad("(root): Invalid input: expected int, received number (invalid_type)"),
    ],
    [
      "NaN",
      integer(),
      Number.NaN,
      bad("(root): Invalid input: expected number, received NaN (invalid_type)"),
    ],
    [
      "Infinity",
      integer(),
      Number.POSITIVE_INFINITY,
      bad("(root): Invalid input: expected int, received number (invalid_type)"),
    ],
    [
      "a numeric string",
      integer(),
      "3",
      bad("(root): Invalid input: expected number, received string (invalid_type)"),
    ],
    ["at the minimum", integer(atLeast(1)), 1, ok(1)],
    [
      "under the minimum",
      integer(atLeast(1)),
      0,
      bad("(root): Too small: expected number to be >=1 (too_small)"),
    ],
    ["at the maximum", integer(atMost(5)), 5, ok(5)],
    ["over the maximum", integer(atMost(5)), 6, bad("(root): Too big: expected number to be <=5 (too_big)")],
    ["true", boolean, true, ok(true)],
    ["false", boolean, false, ok(false)],
    [
      "a string for a boolean",
      boolean,
      "yes",
      bad("(root): Invalid input: expected boolean, received string (invalid_type)"),
    ],
    ["an allowed option", oneOf(["A", "B"]), "B", ok("B")],
    [
      "another option",
      oneOf(["A", "B"]),
      "C",
      bad('(root): Invalid option: expected one of "A"|"B" (invalid_value)'),
    ],
    [
      "a number for an option",
      oneOf(["A"]),
      1,
      bad('(root): Invalid option: expected one of "A" (invalid_value)'),
    ],
    ["anything for unknown", unknown, { a: 1 }, ok({ a: 1 })],
    ["an https URL", url(["https:"]), "https://r.example/x", ok("https://r.example/x")],
    [
      "an http URL where https only",
      url(["https:"]),
      "http://r.example",
      bad("(root): Invalid URL (invalid_format)"),
    ],
    ["not a URL", url(["https:"]), "r.example", bad("(root): Invalid URL (invalid_format)")],
    [
      "a URL without a host",
      url(["http:", "https:"]),
      "https://",
      bad("(root): Invalid URL (invalid_format)"),
    ],
    [
      "a number for a URL",
      url(["https:"]),
      1,
      bad("(root): Invalid input: expected string, received number (invalid_type)"),
    ],
    [
      "a URL without credentials",
      urlWithoutCredentials(["https:"], "hint"),
      "https://r/x",
      ok("https://r/x"),
    ],
    [
      "a URL with a user",
      urlWithoutCredentials(["https:"], "hint"),
      "https://u@r/x",
      bad("(root): must not contain a user name or password; hint (custom)"),
    ],
    [
      "a URL with only a password",
      urlWithoutCredentials(["https:"], "hint"),
      "https://:p@r/x",
      bad("(root): must not contain a user name or password; hint (custom)"),
    ],
    [
      "not a URL, credentials or not",
      urlWithoutCredentials(["https:"], "hint"),
      "u:p@r",
      bad("(root): Invalid URL (invalid_format)"),
    ],
  ];
  for (const [label, schema, value, want] of ROWS)
    test(label, () => expect(run(schema, value)).toEqual(want));
});

describe("absent values", () => {
  test("optional: undefined passes, null does not", () => {
    expect(run(optional(string()), undefined)).toEqual(ok(undefined));
    expect(run(optional(string()), null)).toEqual(
      bad("(root): Invalid input: expected string, received null (invalid_type)"),
    );
  });
  test("nullish: null and undefined both read as undefined", () => {
    expect(run(nullish(string()), null)).toEqual(ok(undefined));
    expect(run(nullish(string()), undefined)).toEqual(ok(undefined));
    expect(run(nullish(string()), "x")).toEqual(ok("x"));
  });
  test("withDefault: only undefined takes the default, and a present value is still checked", () => {
    expect(run(withDefault(integer(), 7), undefined)).toEqual(ok(7));
    expect(run(withDefault(integer(), 7), 0)).toEqual(ok(0));
    expect(run(withDefault(integer(), 7), null)).toEqual(
      bad("(root): Invalid input: expected number, received null (invalid_type)"),
    );
  });
});

describe("map", () => {
  const even = map(integer(), (n) => (n % 2 === 0 ? n / 2 : { problem: `${n} is odd` }));
  test("converts a valid value", () => expect(run(even, 4)).toEqual(ok(2)));
  test("a problem becomes a custom issue", () =>
    expect(run(even, 3)).toEqual(bad("(root): 3 is odd (custom)")));
  test("a conversion to null is a value, not a problem", () =>
    expect(
      run(
        map(integer(), () => null),
        1,
      ),
    ).toEqual(ok(null)));
  test("an invalid input is reported once and never converted", () => {
    let calls = 0;
    const counted = map(integer(), (n) => {
      calls++;
      return n;
    });
    expect(run(counted, "x")).toEqual(
      bad("(root): Invalid input: expected number, received string (invalid_type)"),
    );
    expect(calls).toBe(0);
  });
});

describe("containers", () => {
  const point = object({ x: integer(), label: optional(string()) });
  test("an object keeps its fields and drops others", () =>
    expect(run(point, { x: 1, label: "a", extra: true })).toEqual(ok({ x: 1, label: "a" })));
  test("an absent optional field stays absent, not undefined", () => {
    const r = parse(point, { x: 1 });
    expect(r.ok && Object.keys(r.value)).toEqual(["x"]);
  });
  test("nested paths name the field", () =>
    expect(run(object({ a: array(point) }), { a: [{ x: 1 }, { x: "2" }] })).toEqual(
      bad("a[1].x: Invalid input: expected number, received string (invalid_type)"),
    ));
  test("a strict object reports each unknown field at its own level", () =>
    expect(run(strictObject({ a: strictObject({ b: boolean }) }), { a: { b: true, c: 1 }, d: 2 })).toEqual(
      bad(
        'a: Unrecognized key: "c" (unrecognized_keys)',
        '(root): Unrecognized key: "d" (unrecognized_keys)',
      ),
    ));
  test("an inherited property is not a field", () =>
    expect(run(object({ toString: optional(string()) }), {})).toEqual(ok({})));
  for (const [label, value, got] of [
    ["an array", [], "array"],
    ["null", null, "null"],
    ["a string", "x", "string"],
  ] as const)
    test(`${label} is not an object`, () =>
      expect(run(point, value)).toEqual(
        bad(`(root): Invalid input: expected object, received ${got} (invalid_type)`),
      ));
  test("array: every item is checked and the length rule applies", () => {
    expect(run(array(integer(), minItems(1)), [])).toEqual(
      bad("(root): Too small: expected array to have >=1 items (too_small)"),
    );
    expect(run(array(integer(), minItems(1)), [1, 2])).toEqual(ok([1, 2]));
    expect(run(array(integer()), {})).toEqual(
      bad("(root): Invalid input: expected array, received object (invalid_type)"),
    );
  });
  test("record: values are checked by key and __proto__ stays a plain key", () => {
    expect(run(record(integer()), { a: 1, b: "x" })).toEqual(
      bad("b: Invalid input: expected number, received string (invalid_type)"),
    );
    const r = parse(record(integer()), JSON.parse('{"__proto__": 5}'));
    expect(r.ok && Object.getPrototypeOf(r.value)).toBe(Object.prototype);
    expect(r.ok && Object.hasOwn(r.value, "__proto__")).toBe(true);
    expect(run(record(integer()), [])).toEqual(
      bad("(root): Invalid input: expected record, received array (invalid_type)"),
    );
  });
});

describe("formatPath", () => {
  const ROWS: Array<[Array<string | number>, string]> = [
    [[], "(root)"],
    [["tag"], "tag"],
    [["images", 0, "targets", 1, "kind"], "images[0].targets[1].kind"],
    [[0, "a"], "[0].a"],
  ];
  for (const [path, want] of ROWS) test(want, () => expect(formatPath(path)).toBe(want));
});
