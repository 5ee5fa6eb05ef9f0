// The real tier's alert monitor counts an alert gone only once it stays gone for `hold` ms
// (tests/real/pipeline/monitor.ts): a failed scrape resolves an alert for an evaluation or two.
import { describe, expect, test } from "bun:test";
import { held, type Seen } from "../real/pipeline/monitor.ts";

const alert = { labels: { alertname: "A" }, annotations: {}, state: "firing" as const };
/** One sample every 100 ms from t = 0; `x` fires, `.` does not. */
const samples = (pattern: string): Seen[] =>
  [...pattern].map((c, i) => ({ t: i * 100, firing: c === "x" ? [alert] : [] }));
const gone = (s: Seen) => s.firing.length === 0;

describe("held: the start of the first absence that lasts", () => {
  test("without hold, the first sample without the alert", () => {
    expect(held(samples("xx.x...."), 0, gone)).toBe(200);
  });
  test("a short gap is not the end: the absence must last hold ms", () => {
    expect(held(samples("xx.x...."), 0, gone, 300)).toBe(400);
  });
  test("not yet: the absence so far is shorter than hold", () => {
    expect(held(samples("xx.x.."), 0, gone, 300)).toBeUndefined();
  });
  test("samples before since do not count", () => {
    expect(held(samples("....xx..."), 300, gone, 100)).toBe(600);
  });
});
