// The outcome of a tick that meets something unexpected: still an outcome with a reason, and
// never blamed on the state object when the state object was read fine (`error`
// means the state object could not be read, or anything unexpected).
import { afterAll, beforeEach, expect, test } from "bun:test";
import { type InProcessWorld, startInProcessWorld } from "../properties/inprocess.ts";
import { STORE_PATH } from "../support/world.ts";

const w: InProcessWorld = await startInProcessWorld();
afterAll(() => w.stop());
beforeEach(() => w.reset());

test("a resolver that throws is unexpected, not state_unreadable; nothing is written", async () => {
  const { result } = await w.tick((ctx) => ({
    ...ctx,
    resolve: async () => {
      throw new Error("a bug in the resolver");
    },
  }));
  expect([result.outcome, result.reason]).toEqual(["error", "unexpected"]);
  expect(result.message).toContain("a bug in the resolver");
  expect(w.api.log.filter((e) => e.method !== "GET")).toEqual([]);
});

test("a store that cannot be read is store_unreadable", async () => {
  w.api.faults.add({ method: "GET", path: STORE_PATH, fault: { type: "status", code: 403 } });
  const { result } = await w.tick();
  expect([result.outcome, result.reason]).toEqual(["error", "store_unreadable"]);
});
