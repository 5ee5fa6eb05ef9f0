import { describe, expect, test } from "bun:test";
import type { Action, Rollout } from "../model.ts";
import { phases } from "./apply.ts";
import { inParallel, lanesOf } from "./lanes.ts";

const roll = (name: string, group: number): Rollout => ({
  workload: { kind: "Deployment", namespace: "apps", name },
  containers: [{ name, image: `${name}:2` }],
  images: [name],
  group,
});
const act = (r: Rollout): Action => ({ type: "rollout", ...r });
const reset: Action = { type: "reset", counts: { a: 1 } };
const write: Action = {
  type: "write-state",
  change: {},
  attempts: {},
  repins: [],
  streaks: [],
  flaps: [],
  firstSeen: [],
};

describe("phases", () => {
  test("consecutive rollouts become one step, everything else stays in order", () => {
    const [a, b, c] = [roll("a", 0), roll("b", 1), roll("c", 0)];
    const got = phases([write, act(a), act(b), act(c), reset]);
    expect(got.map((p) => (Array.isArray(p) ? p.map((r) => r.workload.name) : p.type))).toEqual([
      "write-state",
      ["a", "b", "c"],
      "reset",
    ]);
    expect(phases([reset])).toEqual([reset]);
  });
});

describe("lanesOf", () => {
  const cases: Array<[string, Rollout[], string[][]]> = [
    ["none", [], []],
    ["one group keeps the plan's order", [roll("x", 0), roll("y", 0)], [["x", "y"]]],
    [
      "interleaved groups: each lane in plan order, lanes by their first rollout",
      [roll("a", 1), roll("b", 0), roll("c", 1), roll("d", 2), roll("e", 0)],
      [["a", "c"], ["b", "e"], ["d"]],
    ],
  ];
  for (const [name, rollouts, want] of cases)
    test(name, () => expect(lanesOf(rollouts).map((l) => l.map((r) => r.workload.name))).toEqual(want));
});

describe("inParallel", () => {
  /** Items that end only when the test says so: what is in flight is seen, not timed. */
  function gated(n: number) {
    const release: Array<() => void> = [];
    const started: number[] = [];
    let inFlight = 0;
    let most = 0;
    const each = (i: number) => {
      started.push(i);
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise<void>((done) => {
        release[i] = () => {
          inFlight--;
          done();
        };
      });
    };
    return { items: Array.from({ length: n }, (_, i) => i), each, release, started, most: () => most };
  }

  for (const [n, width, first] of [
    [6, 4, 4],
    [6, 1, 1],
    [2, 4, 2],
    [3, 0, 1],
  ] as const)
    test(`${n} items, width ${width}: ${first} start, the next as one ends, all in order`, async () => {
      const g = gated(n);
      const all = inParallel(g.items, width, g.each);
      await Bun.sleep(0);
      expect(g.started).toEqual(g.items.slice(0, first));
      for (let i = 0; i < n; i++) {
        g.release[i]?.();
        await Bun.sleep(0);
      }
      await all;
      expect(g.started).toEqual(g.items);
      expect(g.most()).toBe(first);
    });

  test("an item that throws: the others still run to their end, then its error is thrown", async () => {
    const ran: number[] = [];
    const run = inParallel([0, 1, 2, 3], 2, async (i) => {
      if (i === 0) throw new Error("lane 0 broke");
      await Bun.sleep(1);
      ran.push(i);
    });
    await expect(run).rejects.toThrow("lane 0 broke");
    expect(ran.sort()).toEqual([1, 2, 3]);
  });
});
