import { describe, expect, test } from "bun:test";
import { retryAfterTime } from "./retry-after.ts";

const NOW = Date.parse("2026-12-01T10:00:30Z");
const DATE = "Tue, 01 Dec 2026 10:00:00 GMT";

describe("retryAfterTime", () => {
  test("delay-seconds count from the response's Date", () => {
    expect(retryAfterTime("3600", DATE, NOW)).toEqual({
      at: new Date("2026-12-01T11:00:00Z"),
      delayMs: 3_600_000,
    });
  });
  test("delay-seconds without a (readable) Date count from now", () => {
    const want = { at: new Date(NOW + 90_000), delayMs: 90_000 };
    expect(retryAfterTime("90", undefined, NOW)).toEqual(want);
    expect(retryAfterTime(" 90 ", "yesterday", NOW)).toEqual(want);
  });
  test("an HTTP-date is the time itself; the delay is measured from the response's Date", () => {
    expect(retryAfterTime("Tue, 01 Dec 2026 12:00:00 GMT", DATE, NOW)).toEqual({
      at: new Date("2026-12-01T12:00:00Z"),
      delayMs: 7_200_000,
    });
    // asctime, one of the obsolete forms a recipient must accept
    expect(retryAfterTime("Tue Dec  1 12:00:00 2026", DATE, NOW)?.at.toISOString()).toBe(
      "2026-12-01T12:00:00.000Z",
    );
  });
  test("an HTTP-date in the past is a wait of zero", () => {
    expect(retryAfterTime("Tue, 01 Dec 2026 09:00:00 GMT", DATE, NOW)?.delayMs).toBe(0);
  });
  test("absent, empty, negative, fractional or unreadable: undefined", () => {
    for (const v of [undefined, "", "  ", "-5", "1.5", "soon", "2026-12-01T12:00:00Z", "12345678901"])
      expect([v, retryAfterTime(v, DATE, NOW)]).toEqual([v, undefined]);
  });
});
