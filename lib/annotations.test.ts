// The annotation keys are a compatibility contract with the earlier shell job (SPEC "State
// annotations"), and the counter read is the fail-closed gate of the whole refresh.
import { describe, expect, test } from "bun:test";
import { annotationKeys, quoteForLog, readCounter } from "./annotations.ts";

test("keys with the tracebloc.io prefix are exactly the shell job's", () => {
  const k = annotationKeys("tracebloc.io");
  expect({ ...k, digest: k.digest("api") }).toEqual({
    attempt: "tracebloc.io/refresh-attempt",
    flap: "tracebloc.io/refresh-flap-detected",
    skipStreak: "tracebloc.io/refresh-skip-streak",
    traceparent: "tracebloc.io/refresh-attempt-traceparent",
    digest: "tracebloc.io/last-refreshed-api-digest",
  });
});

describe("readCounter", () => {
  const CASES: Array<[string | undefined, ReturnType<typeof readCounter>]> = [
    [undefined, { kind: "absent" }],
    ["0", { kind: "trusted", value: 0 }],
    ["7", { kind: "trusted", value: 7 }],
    ["12", { kind: "trusted", value: 12 }],
    ["007", { kind: "trusted", value: 7 }],
    ["123456789", { kind: "trusted", value: 123456789 }],
    ["1234567890", { kind: "untrusted", raw: "1234567890" }],
    ["", { kind: "untrusted", raw: "" }],
    ["-1", { kind: "untrusted", raw: "-1" }],
    ["1e3", { kind: "untrusted", raw: "1e3" }],
    [" 2", { kind: "untrusted", raw: " 2" }],
    ["2\n", { kind: "untrusted", raw: "2\n" }],
  ];
  for (const [raw, want] of CASES)
    test(`${JSON.stringify(raw)} is ${want.kind}`, () => expect(readCounter(raw)).toEqual(want));
});

describe("quoteForLog", () => {
  const CASES: Array<[string, string]> = [
    ["abc", '"abc"'],
    ['a"b', '"a\\"b"'],
    ["x".repeat(64), `"${"x".repeat(64)}"`],
    ["y".repeat(65), `"${"y".repeat(64)}…"`],
    [`${"z".repeat(64)}tail`, `"${"z".repeat(64)}…"`],
  ];
  for (const [raw, want] of CASES)
    test(`${raw.slice(0, 10)} (${raw.length} chars)`, () => expect(quoteForLog(raw)).toBe(want));
});
