// One tick can be the transition of one image into two states that each announce themselves once:
// stale (maxUnresolvedTicks reached) and frozen (maxSkipTicks reached). Each Event is posted only
// on the tick that reaches its ceiling, so both are posted on a tick that reaches both; an Event
// left out then is never posted at all.
import { expect, test } from "bun:test";
import { agentFails, ann, both, config, observed, unsettled } from "../../../tests/support/plan-tables.ts";
import type { Observed } from "../model.ts";
import { plan } from "./plan.ts";

/** api unresolved (its registry answers 404) and its Deployment apps/api not settled. */
const apiFails = (o: Observed) => {
  agentFails()(o);
  o.digests = { ...o.digests, api: o.digests?.["node-agent"] as NonNullable<Observed["digests"]>[string] };
};
const events = (o: Observed) =>
  plan(o, config())
    .actions.filter((a) => a.type === "event")
    .map((a) => (a.type === "event" ? `${a.image} ${a.reason}` : ""));

test("an image that goes stale and freezes on the same tick posts ImageStale and RefreshFrozen", () => {
  const o = observed(
    both(
      apiFails,
      unsettled,
      (x) => ann(x, "unresolved-streak-api", "7"),
      (x) => ann(x, "skip-streak-api", "7"),
    ),
  );
  const d = plan(o, config());
  expect(d.outcome).toBe("frozen");
  expect(events(o)).toEqual(expect.arrayContaining(["api ImageStale", "api RefreshFrozen"]));
  const frozen = d.actions.find((a) => a.type === "event" && a.reason === "RefreshFrozen");
  // The freeze is about the workload that does not settle; the stale image about its targets.
  expect(frozen).toMatchObject({ regarding: [{ kind: "Deployment", namespace: "apps", name: "api" }] });
});

test("each on its own tick: one Event each, and neither again past its ceiling", () => {
  /** api unresolved and its workload unsettled, with these stored streaks. */
  const apiEvents = (unresolvedStreak: string, skipStreak: string) =>
    events(
      observed(
        both(
          apiFails,
          unsettled,
          (x) => ann(x, "unresolved-streak-api", unresolvedStreak),
          (x) => ann(x, "skip-streak-api", skipStreak),
        ),
      ),
    ).filter((e) => e.startsWith("api "));
  expect(apiEvents("7", "3")).toEqual(["api ImageStale"]);
  expect(apiEvents("9", "7")).toEqual(["api RefreshFrozen"]);
  expect(apiEvents("9", "9")).toEqual([]);
});
