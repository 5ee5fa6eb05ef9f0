// The annotation keys are a compatibility contract with the earlier shell job, and the counter
// read is the fail-closed gate of the whole refresh.
import { describe, expect, test } from "bun:test";
import {
  annotationKeys,
  imageCounters,
  legacyKeys,
  migrationWrites,
  quoteForLog,
  readCounter,
} from "./annotations.ts";

test("keys with the tracebloc.io prefix: digest and skip streak are exactly the shell job's; counters per image", () => {
  const k = annotationKeys("tracebloc.io");
  expect(k.skipStreak).toBe("tracebloc.io/refresh-skip-streak");
  expect(k.digest("api")).toBe("tracebloc.io/last-refreshed-api-digest");
  expect(k.legacy).toEqual({
    attempt: "tracebloc.io/refresh-attempt",
    flap: "tracebloc.io/refresh-flap-detected",
    traceparent: "tracebloc.io/refresh-attempt-traceparent",
  });
  expect(k.retryAfter).toBe("tracebloc.io/registry-retry-after");
  expect(k.image("node-agent")).toEqual({
    digest: "tracebloc.io/last-refreshed-node-agent-digest",
    attempt: "tracebloc.io/refresh-attempt-node-agent",
    flap: "tracebloc.io/refresh-flap-detected-node-agent",
    traceparent: "tracebloc.io/refresh-attempt-traceparent-node-agent",
    unresolved: "tracebloc.io/unresolved-streak-node-agent",
    repin: "tracebloc.io/repin-streak-node-agent",
    paused: "tracebloc.io/paused-node-agent",
    rejected: "tracebloc.io/rejected-node-agent-digest",
    candidates: "tracebloc.io/candidates-node-agent",
  });
});

describe("legacy keys", () => {
  const P = "image-refresh.io";
  test("while present they count for every image without a key of its own", () => {
    const a = {
      [`${P}/refresh-attempt`]: "3",
      [`${P}/refresh-flap-detected`]: "3",
      [`${P}/refresh-attempt-api`]: "1",
    };
    expect(imageCounters(a, P, "api")).toMatchObject({
      attempt: { kind: "trusted", value: 1 },
      attemptFrom: `${P}/refresh-attempt-api`,
    });
    expect(imageCounters(a, P, "agent")).toMatchObject({
      attempt: { kind: "trusted", value: 3 },
      attemptFrom: `${P}/refresh-attempt`,
      flap: "3",
    });
  });
  test("they are read under any prefix; the configured prefix wins a tie", () => {
    expect(legacyKeys({ "tracebloc.io/refresh-attempt": "2" }, P)).toEqual({
      attempt: "tracebloc.io/refresh-attempt",
    });
    expect(legacyKeys({ "a.io/refresh-attempt": "2", [`${P}/refresh-attempt`]: "1" }, P)).toEqual({
      attempt: `${P}/refresh-attempt`,
    });
    expect(legacyKeys({ [`${P}/refresh-attempt-api`]: "2", "refresh-attempt": "1" }, P)).toEqual({});
  });
  test("migration copies them to every image's own keys and removes them in the same write", () => {
    const a = {
      [`${P}/refresh-attempt`]: "2",
      [`${P}/refresh-attempt-traceparent`]: "00-t",
      [`${P}/refresh-attempt-b`]: "1",
    };
    expect(migrationWrites(a, P, ["a", "b"])).toEqual({
      [`${P}/refresh-attempt-a`]: "2",
      [`${P}/refresh-attempt-traceparent-a`]: "00-t",
      [`${P}/refresh-attempt-traceparent-b`]: "00-t",
      [`${P}/refresh-attempt`]: null,
      [`${P}/refresh-attempt-traceparent`]: null,
    });
    expect(migrationWrites({ [`${P}/refresh-attempt-a`]: "1" }, P, ["a"])).toEqual({});
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
