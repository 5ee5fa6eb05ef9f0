// The tick's clock is the API server's Date header when it is an IMF-fixdate
// (RFC 9110 §5.6.7): the exact text toUTCString writes, weekday and calendar day included;
// anything else is this node's clock.
import { expect, test } from "bun:test";
import type { TickContext } from "./context.ts";
import { tickClock } from "./observe.ts";

const LOCAL = 5_000;
const ctx = { now: () => LOCAL, log: { warn() {}, debug() {} } } as unknown as Pick<
  TickContext,
  "now" | "log"
>;

test("an IMF-fixdate is the clock, surrounding space ignored", () => {
  expect(tickClock("Tue, 01 Dec 2026 12:00:01 GMT", ctx, false)).toBe(Date.UTC(2026, 11, 1, 12, 0, 1));
  expect(tickClock(" Sun, 06 Nov 1994 08:49:37 GMT ", ctx, false)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
});

test("any other text is not: the node's clock is used", () => {
  const others = [
    "Mon, 01 Dec 2026 12:00:01 GMT", // the wrong weekday
    "Tue, 1 Dec 2026 12:00:01 GMT", // one-digit day
    "Tue, 32 Dec 2026 12:00:01 GMT",
    "Tue, 01 Dec 2026 12:00:01 UTC",
    "2026-12-01T12:00:01Z",
    "Tuesday, 01-Dec-26 12:00:01 GMT", // RFC 850, obsolete
    "",
  ];
  for (const text of others) expect(tickClock(text, ctx, false)).toBe(LOCAL);
});
