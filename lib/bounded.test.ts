import { expect, test } from "bun:test";
import { bounded } from "./bounded.ts";

/** A call that stays in flight until `open` is called for it. */
function held(log: { inFlight: number; most: number }) {
  const gates: Array<() => void> = [];
  const call = async (i: number) => {
    log.inFlight++;
    log.most = Math.max(log.most, log.inFlight);
    await new Promise<void>((r) => gates.push(r));
    log.inFlight--;
    return i;
  };
  return {
    call,
    openAll: () => {
      for (const g of gates.splice(0)) g();
    },
  };
}

test("at most `limit` calls in flight, the rest run in order as slots free", async () => {
  const log = { inFlight: 0, most: 0 };
  const h = held(log);
  const slot = bounded(3);
  const started: number[] = [];
  const all = Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      slot(() => {
        started.push(i);
        return h.call(i);
      }),
    ),
  );
  for (let round = 0; round < 10; round++) {
    await Bun.sleep(1);
    h.openAll();
  }
  expect(await all).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  expect(log.most).toBe(3);
  expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test("a failing call frees its slot and its error reaches its caller only", async () => {
  const slot = bounded(1);
  const failed = slot(() => Promise.reject(new Error("boom")));
  const next = slot(async () => "next");
  await expect(failed).rejects.toThrow("boom");
  expect(await next).toBe("next");
});

test("a bound that is not a positive integer is refused", () => {
  expect(() => bounded(0)).toThrow("positive integer");
  expect(() => bounded(1.5)).toThrow("positive integer");
});
