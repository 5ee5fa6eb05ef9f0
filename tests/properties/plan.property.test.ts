// Invariants of plan() over thousands of random configurations and observations: the rules of
// SPEC "One tick" that must hold for every input, not only the rows of plan.test.ts. Pure and
// fast (no I/O), so the mutation run includes it. fast-check prints the seed of a failure.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { readCounter } from "../../lib/annotations.ts";
import type { Config } from "../../lib/config.ts";
import { exitCodeFor, OUTCOMES } from "../../lib/outcomes.ts";
import { type Action, type Decision, type Observed, REASONS } from "../../lib/tick/model.ts";
import { plan } from "../../lib/tick/plan.ts";
import { caseArb, PREFIX } from "./arbitraries.ts";

const RUNS = Number(process.env.PLAN_PROPERTY_RUNS ?? 2000);
const k = (name: string) => `${PREFIX}/${name}`;
const types = (d: Decision) => d.actions.map((a) => a.type);
const of = <T extends Action["type"]>(d: Decision, t: T) =>
  d.actions.filter((a): a is Extract<Action, { type: T }> => a.type === t);

function attemptOf(o: Observed) {
  return readCounter(o.state.annotations[k("refresh-attempt")]);
}

/** Each property gets the config, the observation and the decision; it throws on a violation. */
const PROPERTIES: Array<[string, (c: Config, o: Observed, d: Decision) => void]> = [
  [
    "outcome and reason come from the closed sets; exit code is 0 or 1",
    (_c, _o, d) => {
      expect(OUTCOMES).toContain(d.outcome);
      expect(REASONS).toContain(d.reason);
      expect([0, 1]).toContain(exitCodeFor(d.outcome));
    },
  ],
  [
    "a rollout is always preceded by exactly one persist-attempt",
    (_c, _o, d) => {
      const t = types(d);
      const firstRollout = t.indexOf("rollout");
      if (firstRollout === -1) return;
      expect(t.filter((x) => x === "persist-attempt")).toHaveLength(1);
      expect(t.indexOf("persist-attempt")).toBeLessThan(firstRollout);
    },
  ],
  [
    "persist-attempt only when the count is trusted (or absent) and below the maximum; it writes count+1",
    (c, o, d) => {
      const a = attemptOf(o);
      for (const p of of(d, "persist-attempt")) {
        expect(a.kind).not.toBe("untrusted");
        const count = a.kind === "trusted" ? a.value : 0;
        expect(count).toBeLessThan(c.maxRefreshAttempts);
        expect(p.count).toBe(count + 1);
      }
    },
  ],
  [
    "an untrusted counter never produces a rollout",
    (_c, o, d) => {
      if (attemptOf(o).kind === "untrusted") expect(types(d)).not.toContain("rollout");
    },
  ],
  [
    "reset comes after every rollout and before the digest record; the record names what rolled out",
    (_c, _o, d) => {
      const t = types(d);
      if (!t.includes("rollout")) {
        expect(t).not.toContain("reset");
        return;
      }
      const reset = t.indexOf("reset");
      expect(reset).toBeGreaterThan(t.lastIndexOf("rollout"));
      expect(t.lastIndexOf("record-digests")).toBeGreaterThan(reset);
      const recorded = of(d, "record-digests").at(-1)?.digests ?? {};
      for (const r of of(d, "rollout"))
        for (const key of r.images) expect(Object.keys(recorded)).toContain(key);
      expect(d.outcome).toBe("refreshed");
    },
  ],
  [
    "lockout: count >= max patches no workload; the marker is written only when absent",
    (c, o, d) => {
      const a = attemptOf(o);
      const locked = a.kind === "trusted" && a.value >= c.maxRefreshAttempts;
      if (locked) expect(types(d)).not.toContain("rollout");
      if (d.outcome === "locked_out") {
        expect(locked).toBe(true);
        const marks = of(d, "mark-flap");
        if (o.state.annotations[k("refresh-flap-detected")] === undefined)
          expect(marks).toEqual([{ type: "mark-flap", count: a.kind === "trusted" ? a.value : -1 }]);
        else expect(marks).toEqual([]);
      } else expect(types(d)).not.toContain("mark-flap");
    },
  ],
  [
    "an unsettled tick writes only the streak (+ an Event) and consults no digest",
    (c, o, d) => {
      if (o.state.settled) return;
      const streak = readCounter(o.state.annotations[k("refresh-skip-streak")]);
      if (streak.kind === "untrusted") {
        expect(d.actions).toEqual([]);
        expect(exitCodeFor(d.outcome)).toBe(1);
        return;
      }
      const next = (streak.kind === "trusted" ? streak.value : 0) + 1;
      expect(d.actions[0]).toEqual({ type: "write-streak", value: next });
      expect(
        types(d)
          .slice(1)
          .every((t) => t === "event"),
      ).toBe(true);
      expect(d.outcome).toBe(next >= c.maxSkipTicks ? "frozen" : "skipped");
      expect(d.after.skipStreak).toBe(next);
      // the Event only on the transition into the freeze
      expect(of(d, "event")).toHaveLength(next === c.maxSkipTicks ? 1 : 0);
    },
  ],
  [
    "a settled tick clears a recorded streak first, and only then",
    (_c, o, d) => {
      if (!o.state.settled) return;
      const has = o.state.annotations[k("refresh-skip-streak")] !== undefined;
      expect(types(d).filter((t) => t === "clear-streak")).toHaveLength(has ? 1 : 0);
      if (has) expect(d.actions[0]).toEqual({ type: "clear-streak" });
      expect(types(d)).not.toContain("write-streak");
      expect(d.after.skipStreak).toBe(0);
    },
  ],
  [
    "digests recorded are only ones the registry returned for non-pinned images",
    (c, o, d) => {
      for (const r of of(d, "record-digests"))
        for (const [key, digest] of Object.entries(r.digests)) {
          const img = c.images.find((i) => i.key === key);
          expect(img?.pinned).toBe(false);
          expect(o.digests?.[key]).toEqual({ ok: true, digest });
        }
    },
  ],
  [
    "each workload is rolled once, to <host>/<repository>@<digest> of a changed image",
    (c, o, d) => {
      const rolls = of(d, "rollout");
      const ids = rolls.map((r) => `${r.workload.kind}/${r.workload.namespace}/${r.workload.name}`);
      expect(new Set(ids).size).toBe(ids.length);
      for (const r of rolls)
        for (const ct of r.containers) {
          const img = c.images.find((i) =>
            i.targets.some(
              (t) => t.name === r.workload.name && t.kind === r.workload.kind && t.container === ct.name,
            ),
          );
          const seen = img ? o.digests?.[img.key] : undefined;
          expect(seen?.ok).toBe(true);
          if (img && seen?.ok) expect(ct.image).toBe(`${c.registry.host}/${img.repository}@${seen.digest}`);
          expect(o.state.annotations[k(`last-refreshed-${img?.key}-digest`)]).not.toBe(
            seen?.ok ? seen.digest : undefined,
          );
        }
    },
  ],
  [
    "a healthy, unchanged installation writes nothing",
    (c, o, d) => {
      const a = o.state.annotations;
      const unchanged =
        o.state.settled &&
        a[k("refresh-skip-streak")] === undefined &&
        c.images.every((i) => {
          const seen = o.digests?.[i.key];
          return i.pinned || !seen?.ok || a[k(`last-refreshed-${i.key}-digest`)] === seen.digest;
        });
      if (unchanged) {
        expect(d.actions).toEqual([]);
        expect(d.outcome).toBe("noop");
      }
      if (d.outcome === "noop") expect(types(d).filter((t) => t !== "clear-streak")).toEqual([]);
    },
  ],
  [
    "held and error decisions never touch a workload or a counter; they record only first observations",
    (c, o, d) => {
      if (d.outcome !== "held" && d.outcome !== "error") return;
      expect(types(d).filter((t) => t !== "clear-streak" && t !== "record-digests")).toEqual([]);
      const prefix = `${c.annotationPrefix}/last-refreshed-`;
      for (const a of d.actions)
        if (a.type === "record-digests")
          for (const key of Object.keys(a.digests))
            expect(o.state.annotations[`${prefix}${key}-digest`]).toBeUndefined();
    },
  ],
];

describe("plan() properties", () => {
  for (const [name, check] of PROPERTIES) {
    test(name, () => {
      fc.assert(
        fc.property(caseArb, ({ c, o }) => check(c, o, plan(o, c))),
        { numRuns: RUNS },
      );
    }, 30_000);
  }

  test("plan is pure: it never changes its input and gives the same answer twice", () => {
    fc.assert(
      fc.property(caseArb, ({ c, o }) => {
        const before = structuredClone(o);
        const first = plan(o, c);
        expect(o).toEqual(before);
        expect(plan(structuredClone(o), structuredClone(c))).toEqual(first);
      }),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  }, 30_000);

  test("every outcome is reachable from the generators (the properties are not vacuous)", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(caseArb, ({ c, o }) => {
        seen.add(plan(o, c).outcome);
      }),
      { numRuns: RUNS * 2 },
    );
    // failed is apply's outcome alone; the rest all come from plan
    expect([...seen].sort()).toEqual(OUTCOMES.filter((x) => x !== "failed").sort());
  }, 30_000);
});
