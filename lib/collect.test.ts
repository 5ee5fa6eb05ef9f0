import { expect, test } from "bun:test";
import { COLLECT_EVERY, collector } from "./collect.ts";

test("collects on every COLLECT_EVERY-th request, never before", () => {
  const cases: Array<{ requests: number; every?: number; collections: number }> = [
    { requests: 0, collections: 0 },
    { requests: COLLECT_EVERY - 1, collections: 0 },
    { requests: COLLECT_EVERY, collections: 1 },
    { requests: 3 * COLLECT_EVERY + 1, collections: 3 },
    { requests: 7, every: 1, collections: 7 },
    { requests: 7, every: 3, collections: 2 },
  ];
  for (const c of cases) {
    let collections = 0;
    const settled = collector(() => collections++, c.every);
    for (let i = 0; i < c.requests; i++) settled();
    expect({ ...c, collections }).toEqual(c);
  }
});

test("a count that is not a whole number of at least 1 is refused up front", () => {
  for (const every of [0, -1, 1.5, Number.NaN])
    expect(() => collector(() => {}, every)).toThrow(
      `Cannot count requests between collections: current value is ${every}`,
    );
});
