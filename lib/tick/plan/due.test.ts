// The verdict helpers build a new judgement and leave the one they are given as it was: a
// judgement passed in deep-frozen comes back unchanged, and the helper's answer is a new value.
import { describe, expect, test } from "bun:test";
import { config, D, observed, shareProxy, verdictOf } from "../../../tests/support/plan-tables.ts";
import { imageBook } from "../../state/book.ts";
import { combine } from "./combine.ts";
import { due } from "./due.ts";
import { type Judgement, say } from "./judgement.ts";

function deepFreeze<T>(x: T): T {
  if (x && typeof x === "object" && !Object.isFrozen(x)) {
    for (const v of Object.values(x)) deepFreeze(v);
    Object.freeze(x);
  }
  return x;
}

const judgement = (key: string, j: Partial<Judgement> = {}): Judgement => ({
  verdict: verdictOf(key),
  blocks: false,
  writes: {},
  countsStreak: false,
  flap: false,
  ...j,
});

describe("the verdict helpers do not mutate the judgement they are given", () => {
  test("say returns a new judgement with the new outcome", () => {
    const j = deepFreeze(judgement("api"));
    const said = say(j, { outcome: "held", reason: "attempt_claimed", message: "claimed" });
    expect(j.verdict.outcome).toBe("noop");
    expect(said.verdict).toMatchObject({ outcome: "held", reason: "attempt_claimed", message: "claimed" });
    expect(said).not.toBe(j);
  });

  test("due returns a new judgement with the refresh due", () => {
    const j = deepFreeze(judgement("api"));
    const c = config();
    const img = c.images[0] as (typeof c.images)[0];
    const b = imageBook(() => undefined);
    const d = due(j, { img, b, c, o: observed(), digest: D("c") });
    expect(j).toEqual(judgement("api"));
    expect(d.due).toEqual({ digest: D("c"), count: 1 });
    expect(d.verdict.outcome).toBe("refreshed");
  });

  test("combine's isolation leaves the judgements it was given as they were", () => {
    const c = config(shareProxy);
    const api = judgement("api", { blocks: true, verdict: verdictOf("api", { outcome: "locked_out" }) });
    const agent = judgement("node-agent", {
      due: { digest: D("e"), count: 1 },
      verdict: verdictOf("node-agent", { outcome: "refreshed", reason: "digest_changed" }),
    });
    const before = structuredClone(agent);
    // A Map's entries are not its own properties: each judgement is frozen itself.
    const given = new Map([
      ["api", deepFreeze(api)],
      ["node-agent", deepFreeze(agent)],
    ]);
    const d = combine(observed(), c, given);
    expect(given.get("node-agent")).toEqual(before);
    expect(d.images.find((v) => v.key === "node-agent")?.reason).toBe("shared_workload");
  });
});
