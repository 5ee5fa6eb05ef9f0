// Invariants of plan() over thousands of random configurations and observations: the rules of a
// tick's decision that must hold for every input, not only the rows of plan.test.ts. Pure and fast
// (no I/O), so the mutation run includes it. fast-check prints the seed of a failure.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { Config } from "../../lib/config.ts";
import { exitCodeFor, mostSevere, OUTCOMES, severity } from "../../lib/outcomes.ts";
import { type Observed, REASONS } from "../../lib/tick/model.ts";
import { plan } from "../../lib/tick/plan/plan.ts";
import { caseArb } from "./arbitraries.ts";
import {
  of,
  type Property,
  patchedFor,
  rolled,
  rolledWorkloads,
  type StateWriteAction,
  types,
  verdict,
  writes,
  written,
} from "./decision.ts";
import {
  countBlocks,
  countOf,
  dataOf,
  imageKeysOf,
  LEGACY,
  numberOf,
  shares,
  stored,
  storedAttempt,
  workloadsOf,
} from "./oracle.ts";
import { expectedRollouts, expectedVerdicts, judge } from "./oracle-verdict.ts";

const RUNS = Number(process.env.PLAN_PROPERTY_RUNS ?? 2000);
const attempt = (_c: Config, o: Observed, key: string) => storedAttempt(o, key);
const unresolvedImages = (c: Config, o: Observed) =>
  c.images.filter((i) => !i.pinned && o.digests !== undefined && o.digests[i.key]?.ok !== true);

const PROPERTIES: Property[] = [
  [
    "outcome and reason come from the closed sets; exit code is 0 or 1",
    (_c, _o, d) => {
      expect(OUTCOMES).toContain(d.outcome);
      expect(REASONS).toContain(d.reason);
      expect([0, 1]).toContain(exitCodeFor(d.outcome));
    },
  ],
  [
    "the tick's outcome is its most severe image verdict, with that image's reason; every image has one",
    (c, _o, d) => {
      expect(d.images.map((v) => v.key)).toEqual(c.images.map((i) => i.key));
      const worst = mostSevere(d.images.map((v) => v.outcome));
      expect(d.outcome).toBe(worst);
      for (const v of d.images) expect(severity(v.outcome)).toBeGreaterThanOrEqual(severity(d.outcome));
      expect(d.images.filter((v) => v.outcome === worst).map((v) => v.reason)).toContain(d.reason);
      for (const v of d.images) expect(d.message).toContain(`${v.key}: ${v.outcome}`);
    },
  ],
  [
    "no image is rolled out without its own count+1 and the digest it tries in the one write-state before the first rollout",
    (c, o, d, truth) => {
      const t = types(d);
      const first = t.indexOf("rollout");
      const w = writes(d);
      expect(w.length).toBeLessThanOrEqual(1);
      if (first === -1) {
        for (const x of w) expect(x.attempts).toEqual({});
        return;
      }
      expect(w).toHaveLength(1);
      expect(t.indexOf("write-state")).toBeLessThan(first);
      const attempts = (w[0] as StateWriteAction).attempts;
      expect(Object.keys(attempts).sort()).toEqual([...rolled(d)].sort());
      for (const key of rolled(d)) {
        const n = attempt(c, o, key);
        expect(n.kind).not.toBe("untrusted");
        expect(numberOf(n)).toBeLessThan(c.maxRefreshAttempts);
        // the digest tried is stored with the count: a failure leaves it as failed-<key>-digest
        const digest = judge(c, o, truth, key).due?.digest;
        expect(attempts[key]).toEqual({ count: numberOf(n) + 1, digest: digest as string });
      }
    },
  ],
  [
    "an untrusted count never rolls that image nor a workload it is in; due, it is held",
    (c, o, d, t) => {
      for (const img of c.images) {
        if (attempt(c, o, img.key).kind !== "untrusted") continue;
        expect(rolled(d).has(img.key)).toBe(false);
        for (const id of workloadsOf(c, img.key)) expect(rolledWorkloads(d).has(id)).toBe(false);
        // a new build or a re-pin: both are counted refreshes
        if (judge(c, o, t, img.key).wanted)
          expect(verdict(d, img.key)).toMatchObject({ outcome: "held", reason: "attempt_untrusted" });
      }
    },
  ],
  [
    "lockout: count >= max never rolls that image nor its workloads and exits 1; the marker is written only when absent",
    (c, o, d, t) => {
      const flaps = writes(d).flatMap((w) => w.flaps);
      const marks = written(c, d).filter(([k]) => /^refresh-flap-detected-/.test(k));
      for (const img of c.images) {
        const n = attempt(c, o, img.key);
        const locked = n.kind === "trusted" && n.value >= c.maxRefreshAttempts;
        const flapKey = `refresh-flap-detected-${img.key}`;
        // decided by the count alone, also when another tick's claim brought it to the maximum
        const ownLockout = locked && judge(c, o, t, img.key).wanted !== undefined;
        if (locked) {
          expect(rolled(d).has(img.key)).toBe(false);
          for (const id of workloadsOf(c, img.key)) expect(rolledWorkloads(d).has(id)).toBe(false);
        }
        const v = verdict(d, img.key);
        expect(v?.outcome === "locked_out" && v.reason === "flap_lockout").toBe(ownLockout);
        // a lockout fails the Job every tick while it lasts, not only the tick that trips it
        if (ownLockout) expect(exitCodeFor(d.outcome)).toBe(1);
        const marked = ownLockout && stored(o, flapKey) === undefined;
        expect(flaps.includes(img.key)).toBe(marked);
        const events = of(d, "event").filter((e) => e.image === img.key && e.reason === "RefreshLockedOut");
        expect(events).toHaveLength(marked ? 1 : 0);
        if (marked) expect(marks).toContainEqual([flapKey, String(numberOf(n))]);
        else if (stored(o, flapKey) === undefined) expect(marks.map(([k]) => k)).not.toContain(flapKey);
      }
      for (const [, v] of marks) expect(v).not.toBeNull();
    },
  ],
  [
    "isolation: exactly the images the rules let roll are rolled, whatever happens to the images they share nothing with",
    (c, o, d, t) => {
      const expected = expectedRollouts(c, o, t);
      expect([...rolled(d)].sort()).toEqual([...expected].sort());
      for (const v of d.images) expect(v.outcome === "refreshed").toBe(expected.has(v.key));
    },
  ],
  [
    "every image's verdict is the oracle's, its rules taken in order; a due image sharing a workload with a blocked one waits with it",
    (c, o, d, t) => {
      for (const [key, e] of expectedVerdicts(c, o, t)) {
        const v = verdict(d, key);
        if (e.outcome === "waits") {
          expect(v?.reason).toBe("shared_workload");
          expect(["held", "locked_out", "paused"]).toContain(v?.outcome as string);
        } else expect(`${v?.outcome}/${v?.reason}`).toBe(`${e.outcome}/${e.reason}`);
      }
    },
  ],
  [
    "a workload carrying a locked-out, untrusted, held or paused image is never patched",
    (c, o, d) => {
      const ids = rolledWorkloads(d);
      for (const img of c.images) {
        const v = verdict(d, img.key);
        const blocks =
          countBlocks(c, o, img.key) || ["held", "locked_out", "paused"].includes(v?.outcome ?? "");
        if (!blocks) continue;
        for (const id of workloadsOf(c, img.key)) expect(ids.has(id)).toBe(false);
      }
    },
  ],
  [
    "images sharing a workload move together: one group, every target of each (a re-pin: every off-pin one) in the rollouts",
    (c, o, d, t) => {
      const rolls = of(d, "rollout");
      const groupOf = new Map<string, number>();
      for (const r of rolls) for (const key of r.images) groupOf.set(key, r.group);
      for (const key of rolled(d)) {
        for (const r of rolls) if (r.images.includes(key)) expect(r.group).toBe(groupOf.get(key) as number);
        const want = judge(c, o, t, key).due?.only ?? [];
        expect([...patchedFor(c, d, key).keys()].sort()).toEqual([...want].sort());
        for (const other of rolled(d)) {
          const together = [...workloadsOf(c, key)].some((w) => workloadsOf(c, other).has(w));
          if (together) expect(groupOf.get(other)).toBe(groupOf.get(key) as number);
        }
      }
      for (const [g, members] of Object.entries(d.groups))
        expect([...members].sort()).toEqual(
          [...groupOf]
            .filter(([, x]) => x === Number(g))
            .map(([k]) => k)
            .sort(),
        );
    },
  ],
  [
    "a tick with an unresolved image is never noop: at least unresolved, the image unresolved, stale or error (held, skipped or frozen when its targets hold it first)",
    (c, o, d, t) => {
      const un = unresolvedImages(c, o);
      if (un.length === 0) return;
      expect(d.outcome).not.toBe("noop");
      expect(severity(d.outcome)).toBeLessThanOrEqual(severity("unresolved"));
      for (const img of un) {
        const v = verdict(d, img.key);
        const e = judge(c, o, t, img.key);
        if (e.targetsOk && e.unsettled === undefined)
          expect(["unresolved", "stale", "error"]).toContain(v?.outcome as string);
        else
          expect([
            "target_unavailable",
            "target_mismatch",
            "not_settled",
            "skip_ceiling",
            "skip_streak_untrusted",
            "unresolved",
            "unresolved_ceiling",
            "unresolved_streak_untrusted",
          ]).toContain(v?.reason as string);
      }
    },
  ],
  [
    "unresolved streak: +1 per unresolved tick whatever else holds the image, stale exactly at the ceiling with one Event, removed when resolved",
    (c, o, d, t) => {
      const w = writes(d)[0];
      for (const img of c.images) {
        const key = `unresolved-streak-${img.key}`;
        const was = stored(o, key);
        const v = verdict(d, img.key);
        const events = of(d, "event").filter((e) => e.image === img.key && e.reason === "ImageStale");
        if (img.pinned || o.digests?.[img.key]?.ok) {
          if (img.pinned || was === undefined) expect(w?.change[key]).toBeUndefined();
          else expect(w?.change[key]).toBeNull();
          expect(events).toEqual([]);
          continue;
        }
        const e = judge(c, o, t, img.key);
        const n = countOf(was);
        if (n.kind === "untrusted") {
          if (e.targetsOk && e.unsettled === undefined)
            expect(v).toMatchObject({ outcome: "error", reason: "unresolved_streak_untrusted" });
          expect(w?.change[key]).toBeUndefined();
          expect(events).toEqual([]);
          continue;
        }
        const next = numberOf(n) + 1;
        expect(w?.change[key]).toBe(String(next));
        expect(w?.streaks).toContain(img.key);
        if (e.targetsOk && e.unsettled === undefined) {
          expect(v?.outcome).toBe(next >= c.maxUnresolvedTicks ? "stale" : "unresolved");
          const failure = o.digests?.[img.key];
          if (failure && !failure.ok) expect(v?.short).toContain(failure.failure);
        }
        // a freeze reached on the same tick posts its own Event beside it
        expect(events).toHaveLength(next === c.maxUnresolvedTicks ? 1 : 0);
      }
    },
  ],
  [
    "the store is the only bookkeeping plan writes: each key is a configured image's own or the installation's, never a legacy name",
    (c, _o, d) => {
      const own = new Set([...c.images.flatMap((i) => imageKeysOf(i.key)), "registry-retry-after"]);
      for (const [name] of written(c, d)) {
        expect(own).toContain(name);
        expect(LEGACY as readonly string[]).not.toContain(name);
      }
      for (const w of writes(d))
        for (const key of [...Object.keys(w.attempts), ...w.flaps, ...w.streaks, ...w.repins])
          expect(c.images.map((i) => i.key)).toContain(key);
    },
  ],
  [
    "reset comes after every rollout and before the digest record; it and the record name what rolled out (a re-pin records nothing)",
    (_c, o, d) => {
      const t = types(d);
      if (!t.includes("rollout")) {
        expect(t).not.toContain("reset");
        return;
      }
      const reset = t.indexOf("reset");
      expect(reset).toBeGreaterThan(t.lastIndexOf("rollout"));
      const repins = writes(d)[0]?.repins ?? [];
      if ([...rolled(d)].some((key) => !repins.includes(key)))
        expect(t.lastIndexOf("record-digests")).toBeGreaterThan(reset);
      if (repins.length > 0) expect(t.lastIndexOf("pin-restored")).toBeGreaterThan(reset);
      const counts = Object.fromEntries(
        Object.entries(writes(d)[0]?.attempts ?? {}).map(([key, a]) => [key, a.count]),
      );
      expect(of(d, "reset")[0]?.counts).toEqual(counts);
      const recorded = of(d, "record-digests").at(-1)?.digests ?? {};
      for (const key of rolled(d)) {
        const seen = o.digests?.[key];
        const repin = writes(d)[0]?.repins.includes(key) === true;
        if (repin) expect(recorded[key]).toBeUndefined();
        else expect(seen?.ok ? recorded[key] : "unresolved").toBe(seen?.ok ? seen.digest : "resolved");
      }
    },
  ],
  [
    "settled guard per image: an unsettled target counts the image's skip streak; skipped below maxSkipTicks, frozen at it with one Event about that workload; nothing of it or its sharers rolls",
    (c, o, d, t) => {
      const w = writes(d)[0];
      for (const img of c.images) {
        const e = judge(c, o, t, img.key);
        const key = `skip-streak-${img.key}`;
        const v = verdict(d, img.key);
        const frozen = of(d, "event").filter((x) => x.image === img.key && x.reason === "RefreshFrozen");
        if (img.pinned || e.unsettled === undefined) {
          expect(frozen).toEqual([]);
          continue;
        }
        expect(rolled(d).has(img.key)).toBe(false);
        for (const id of workloadsOf(c, img.key)) expect(rolledWorkloads(d).has(id)).toBe(false);
        for (const other of c.images)
          if (shares(c, img.key, other.key)) expect(rolled(d).has(other.key)).toBe(false);
        if (e.skip === undefined) {
          expect(w?.change[key]).toBeUndefined();
          expect(exitCodeFor(d.outcome)).toBe(1);
          expect(frozen).toEqual([]);
          continue;
        }
        expect(w?.change[key]).toBe(String(e.skip));
        expect(w?.streaks).toContain(img.key);
        expect(v?.skipStreak).toBe(e.skip);
        expect(v?.frozen).toBe(e.skip >= c.maxSkipTicks);
        if (e.skip >= c.maxSkipTicks) expect(exitCodeFor(d.outcome)).toBe(1);
        expect(frozen).toHaveLength(e.freezes ? 1 : 0);
        for (const x of frozen)
          expect(x.regarding.map((r) => `${r.kind}/${r.namespace}/${r.name}`)).toEqual([e.unsettled]);
      }
    },
  ],
  [
    "a settled image's skip streak is removed, and only when present; its verdict says 0, not frozen",
    (c, o, d, t) => {
      const w = writes(d)[0];
      for (const img of c.images) {
        if (img.pinned || judge(c, o, t, img.key).unsettled !== undefined) continue;
        const key = `skip-streak-${img.key}`;
        if (stored(o, key) === undefined) expect(w?.change[key]).toBeUndefined();
        else expect(w?.change[key]).toBeNull();
        expect(verdict(d, img.key)).toMatchObject({ skipStreak: 0, frozen: false });
      }
    },
  ],
  [
    "the tag moved back (L == R, past pause and rejection): every waiting candidate is dropped",
    (c, o, d, t) => {
      const w = writes(d)[0];
      for (const img of c.images) {
        const e = judge(c, o, t, img.key);
        const seen = o.digests?.[img.key];
        const key = `candidates-${img.key}`;
        const back =
          e.pastPause &&
          e.reason !== "build_rejected" &&
          seen?.ok &&
          seen.digest === stored(o, `last-refreshed-${img.key}-digest`);
        if (back && stored(o, key) !== undefined) expect(w?.change[key]).toBeNull();
        if (stored(o, key) === undefined) expect(w?.change[key]).toBeUndefined();
      }
    },
  ],
  [
    "digests recorded are only ones the registry returned for non-pinned images, first seen or rolled out",
    (c, o, d) => {
      const prefix = "last-refreshed-";
      for (const [name, digest] of written(c, d)) {
        if (!name.startsWith(prefix)) continue;
        const key = name.slice(prefix.length, -"-digest".length);
        const img = c.images.find((i) => i.key === key);
        expect(img?.pinned).toBe(false);
        expect(o.digests?.[key]).toEqual({ ok: true, digest: digest as string });
        const first = stored(o, name) === undefined;
        expect(first || rolled(d).has(key)).toBe(true);
        if (first) expect(verdict(d, key)?.outcome).toBe("recorded");
      }
    },
  ],
  [
    "each workload is rolled once, to <host>/<repository>@<digest> of a changed image, or a re-pin to the recorded one",
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
          const recorded = stored(o, `last-refreshed-${img?.key}-digest`);
          const repin = verdict(d, img?.key ?? "")?.reason === "pin_restored";
          if (repin) expect(recorded).toBe(seen?.ok ? seen.digest : "resolved");
          else expect(recorded).not.toBe(seen?.ok ? seen.digest : undefined);
        }
    },
  ],
  [
    "a healthy, unchanged installation (every target on its pin) writes nothing; noop writes at most removals",
    (c, o, d, t) => {
      const a = dataOf(o);
      const k = (name: string) => name;
      const unchanged =
        o.registries === undefined &&
        c.images.every((i) => {
          const seen = o.digests?.[i.key];
          if (i.pinned) return true;
          const R = a[k(`last-refreshed-${i.key}-digest`)];
          const settled = i.targets.every((tg) => {
            const w = o.workloads?.[`${tg.kind}/${tg.namespace}/${tg.name}`];
            return w?.found === true && w.settled;
          });
          const onPin = i.targets.every((tg) => {
            const live = t[`${tg.kind}/${tg.namespace}/${tg.name}`]?.[tg.container];
            return live?.kind === "digest" && live.digest === R;
          });
          return (
            seen?.ok === true &&
            R === seen.digest &&
            onPin &&
            settled &&
            a[k(`skip-streak-${i.key}`)] === undefined &&
            a[k(`candidates-${i.key}`)] === undefined &&
            a[k(`rejected-${i.key}-digest`)] !== seen.digest &&
            a[k(`unresolved-streak-${i.key}`)] === undefined &&
            a[k(`repin-streak-${i.key}`)] === undefined &&
            a[k(`paused-${i.key}`)] === undefined
          );
        });
      if (unchanged) {
        expect(d.actions).toEqual([]);
        expect(d.outcome).toBe("noop");
      }
      if (d.outcome === "noop") {
        expect(types(d).filter((t) => t !== "write-state")).toEqual([]);
        for (const w of writes(d)) for (const v of Object.values(w.change)) expect(v).toBeNull();
      }
    },
  ],
  [
    "an image that is not rolled out gets no count and no digest record beyond its first observation",
    (c, o, d) => {
      for (const img of c.images) {
        if (rolled(d).has(img.key)) continue;
        for (const w of writes(d)) expect(w.attempts[img.key]).toBeUndefined();
        for (const [name] of written(c, d))
          if (name === `last-refreshed-${img.key}-digest`) expect(stored(o, name)).toBeUndefined();
      }
    },
  ],
];

describe("plan() properties", () => {
  for (const [name, check] of PROPERTIES) {
    test(name, () => {
      fc.assert(
        fc.property(caseArb, ({ c, o, t }) => check(c, o, plan(o, c), t)),
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

  test("every outcome and every step-6 verdict is reachable from the generators (the properties are not vacuous)", () => {
    const seen = new Set<string>();
    const verdicts = new Set<string>();
    fc.assert(
      fc.property(caseArb, ({ c, o }) => {
        const d = plan(o, c);
        seen.add(d.outcome);
        for (const v of d.images) verdicts.add(`${v.outcome}/${v.reason}`);
      }),
      { numRuns: RUNS * 2 },
    );
    // failed is apply's outcome alone; pending (minimumAge) needs a setting the generators leave
    // at its default (lib/tick/plan.soak.test.ts reaches it); the rest all come from plan
    const unreachable = ["failed", "pending"];
    expect([...seen].sort()).toEqual(OUTCOMES.filter((x) => !unreachable.includes(x)).sort());
    for (const v of [
      "refreshed/digest_changed",
      "refreshed/pin_restored",
      "paused/pinned_by_human",
      "paused/build_rejected",
      "drifted/tag_rerendered",
      "held/pin_contested",
      "held/target_mismatch",
      "held/target_unavailable",
      "held/attempt_untrusted",
      "held/attempt_claimed",
      "held/shared_workload",
      "paused/shared_workload",
      "locked_out/shared_workload",
      "locked_out/flap_lockout",
      "recorded/first_observation",
      "noop/unchanged",
      "noop/pinned",
      "skipped/not_settled",
      "frozen/skip_ceiling",
      "error/skip_streak_untrusted",
      "held/shared_workload",
    ])
      expect(verdicts).toContain(v);
  }, 30_000);
});
