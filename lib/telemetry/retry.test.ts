import { describe, expect, test } from "bun:test";
import { type Failure, retryAfterDelayMs, retryDelay } from "./retry.ts";

const unavailable: Failure = { kind: "status", status: 503 };
const roomy = { remainingMs: 5000, random: 0 };

describe("retryDelay", () => {
  const cases: Array<[string, Failure, number, { remainingMs: number; random: number }, number | undefined]> =
    [
      ["503, first attempt, no jitter: half the first step", unavailable, 1, roomy, 50],
      [
        "503, first attempt, most jitter: the whole step",
        unavailable,
        1,
        { remainingMs: 5000, random: 0.999 },
        100,
      ],
      ["503, fourth attempt doubles three times", unavailable, 4, roomy, 400],
      ["503, fifth attempt: give up", unavailable, 5, roomy, undefined],
      ["429 retried", { kind: "status", status: 429 }, 1, roomy, 50],
      ["502 retried", { kind: "status", status: 502 }, 1, roomy, 50],
      ["504 retried", { kind: "status", status: 504 }, 1, roomy, 50],
      [
        "500 not retried (the OTLP specification lists it as not retryable)",
        { kind: "status", status: 500 },
        1,
        roomy,
        undefined,
      ],
      ["400 not retried", { kind: "status", status: 400 }, 1, roomy, undefined],
      ["401 not retried", { kind: "status", status: 401 }, 1, roomy, undefined],
      ["Retry-After honoured", { kind: "status", status: 503, retryAfterMs: 1000 }, 1, roomy, 1000],
      ["Retry-After 0 honoured", { kind: "status", status: 429, retryAfterMs: 0 }, 1, roomy, 0],
      [
        "Retry-After beyond the deadline: give up now",
        { kind: "status", status: 503, retryAfterMs: 5000 },
        1,
        roomy,
        undefined,
      ],
      ["connection refused, first attempt", { kind: "network" }, 1, roomy, 50],
      ["connection refused, second attempt", { kind: "network" }, 2, roomy, 100],
      ["connection refused, third attempt: give up", { kind: "network" }, 3, roomy, undefined],
      ["timeout never retried", { kind: "timeout" }, 1, roomy, undefined],
      [
        "no room for the next request after the wait",
        unavailable,
        1,
        { remainingMs: 99, random: 0 },
        undefined,
      ],
      ["just room for the next request", unavailable, 1, { remainingMs: 100, random: 0 }, 50],
    ];
  test.each(cases)("%s", (_name, failure, attempt, opts, expected) => {
    expect(retryDelay(failure, attempt, opts)).toBe(expected);
  });

  test("a network failure costs under half a second in waits, whatever the jitter", () => {
    let total = 0;
    for (let attempt = 1; ; attempt++) {
      const d = retryDelay({ kind: "network" }, attempt, { remainingMs: 5000, random: 0.999 });
      if (d === undefined) break;
      total += d;
    }
    expect(total).toBeLessThan(500);
  });
});

describe("retryAfterDelayMs", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");
  const cases: Array<[string | null | undefined, number | undefined]> = [
    [null, undefined],
    [undefined, undefined],
    ["", undefined],
    ["2", 2000],
    [" 0 ", 0],
    ["Wed, 01 Jan 2025 00:00:03 GMT", 3000],
    ["Tue, 31 Dec 2024 23:59:00 GMT", 0],
    ["-1", undefined],
    ["1.5", undefined],
    ["soon", undefined],
  ];
  test.each(cases)("%p", (value, expected) => {
    expect(retryAfterDelayMs(value, now)).toBe(expected);
  });
});
