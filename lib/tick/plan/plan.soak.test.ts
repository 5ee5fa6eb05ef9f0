// plan() with minimumAge (`candidates-<key>`): a new build waits until this
// installation has seen it for minimumAge by the tick's clock (Observed.clock, the API server's
// Date); the newest aged candidate rolls out by digest; at most 5 kept, always the oldest. Same
// base world and table shape as plan.test.ts: api recorded on a, the registry now says c.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  ann,
  both,
  type Case,
  config,
  D,
  newApi,
  observed,
  P,
  REFRESH_API,
  roll,
  runCases,
  write,
} from "../../../tests/support/plan-tables.ts";
import type { Observed } from "../model.ts";
import { parseCandidates } from "./candidates.ts";
import { plan } from "./plan.ts";

const T = Date.parse("2026-12-01T12:00:00Z");
const H = 3_600_000;
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
const entry = (digest: string, seenAgo: number) => `${digest}=${at(T - seenAgo)}`;
const KEY = `candidates-api`;
const soak6h = (c: { minimumAge?: string }) => (c.minimumAge = "6h");
const clock = (ms: number) => (o: Observed) => {
  o.clock = ms;
};
const listed =
  (...entries: string[]) =>
  (o: Observed) =>
    ann(o, "candidates-api", entries.join(","));
const api = (d: string) => `docker.io/myorg/api@${d}`;
const rollApi = (d: string): Case["actions"] => [
  roll("api", [["api", api(d)]], ["api"]),
  roll("api-proxy", [["proxy", api(d)]], ["api"]),
  { type: "reset", counts: { api: 1 } },
];
const newBuild = (d: string) => (o: Observed) => {
  o.digests = { ...o.digests, api: { ok: true, digest: d } };
};

const cases: Case[] = [
  {
    name: "minimumAge 0s is today's behaviour exactly: no candidates written, the new build rolls out",
    o: both(newApi, clock(T)),
    outcome: "refreshed",
    reason: "digest_changed",
    actions: REFRESH_API,
  },
  {
    name: "a new build is first seen: stored in candidates with the tick's clock, pending, no workload touched",
    c: soak6h,
    o: both(newApi, clock(T)),
    outcome: "pending",
    reason: "minimum_age",
    images: { api: "pending/minimum_age", "node-agent": "noop/unchanged" },
    actions: [write({ change: { [KEY]: entry(D("c"), 0) } })],
  },
  {
    name: "seen 1 s short of minimumAge: still pending, and nothing is written (its first-seen time stays)",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("c"), 6 * H - 1000))),
    outcome: "pending",
    actions: [],
  },
  {
    name: "seen exactly minimumAge ago: rolls out; the record write removes the emptied candidates",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("c"), 6 * H))),
    outcome: "refreshed",
    reason: "digest_changed",
    actions: [
      write({ attempts: { api: 1 } }),
      ...rollApi(D("c")),
      { type: "record-digests", digests: { api: D("c") }, candidates: { api: null } },
    ],
  },
  {
    name: "ratchet: the tag moved on to a new build, an older candidate has aged: the aged one rolls out, the new one waits on",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("d"), 7 * H))),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 1 }, change: { [KEY]: `${entry(D("c"), 0)},${entry(D("d"), 7 * H)}` } }),
      ...rollApi(D("d")),
      { type: "record-digests", digests: { api: D("d") }, candidates: { api: entry(D("c"), 0) } },
    ],
  },
  {
    name: "two aged candidates: the newest aged rolls out; the older one and the chosen are dropped with the record",
    c: soak6h,
    o: both(newBuild(D("f")), clock(T), listed(entry(D("e"), 6.5 * H), entry(D("d"), 7 * H))),
    outcome: "refreshed",
    actions: [
      write({
        attempts: { api: 1 },
        change: { [KEY]: [entry(D("f"), 0), entry(D("e"), 6.5 * H), entry(D("d"), 7 * H)].join(",") },
      }),
      ...rollApi(D("e")),
      { type: "record-digests", digests: { api: D("e") }, candidates: { api: entry(D("f"), 0) } },
    ],
  },
  {
    name: "at most 5, always keeping the oldest: a sixth build drops the second-oldest, which then never rolls out",
    c: soak6h,
    o: both(
      newBuild(D("9")),
      clock(T),
      listed(...["5", "4", "3", "2", "1"].map((d, i) => entry(D(d), (i + 1) * H))),
    ),
    outcome: "pending",
    actions: [
      write({
        change: {
          [KEY]: [
            entry(D("9"), 0),
            ...["5", "4", "3"].map((d, i) => entry(D(d), (i + 1) * H)),
            entry(D("1"), 5 * H),
          ].join(","),
        },
      }),
    ],
  },
  {
    name: "at most 5, but an aged candidate never gives way to a younger one: the second-oldest that rolls out is kept, the one after it goes",
    c: soak6h,
    o: both(
      newBuild(D("9")),
      clock(T),
      listed(
        entry(D("5"), 1 * H),
        entry(D("4"), 2 * H),
        entry(D("3"), 3 * H),
        entry(D("2"), 6.5 * H),
        entry(D("1"), 8 * H),
      ),
    ),
    outcome: "refreshed",
    actions: [
      write({
        attempts: { api: 1 },
        change: {
          [KEY]: [
            entry(D("9"), 0),
            entry(D("5"), H),
            entry(D("4"), 2 * H),
            entry(D("2"), 6.5 * H),
            entry(D("1"), 8 * H),
          ].join(","),
        },
      }),
      ...rollApi(D("2")),
      {
        type: "record-digests",
        digests: { api: D("2") },
        candidates: { api: [entry(D("9"), 0), entry(D("5"), H), entry(D("4"), 2 * H)].join(",") },
      },
    ],
  },
  {
    name: "the recorded digest in the list is dropped from it in the tick's write",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("a"), 8 * H))),
    outcome: "pending",
    actions: [write({ change: { [KEY]: entry(D("c"), 0) } })],
  },
  {
    name: "a candidate a human rejected never rolls out, also once it has aged; the new build waits",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("d"), 7 * H)), (o) => ann(o, "rejected-api-digest", D("d"))),
    outcome: "pending",
    actions: [write({ change: { [KEY]: `${entry(D("c"), 0)},${entry(D("d"), 7 * H)}` } })],
  },
  {
    name: "a rejected candidate newer than the one rolling out leaves the list with the record (the record removes the rejected marker)",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("e"), 6.5 * H), entry(D("d"), 7 * H)), (o) =>
      ann(o, "rejected-api-digest", D("e")),
    ),
    outcome: "refreshed",
    actions: [
      write({
        attempts: { api: 1 },
        change: { [KEY]: [entry(D("c"), 0), entry(D("e"), 6.5 * H), entry(D("d"), 7 * H)].join(",") },
      }),
      ...rollApi(D("d")),
      { type: "record-digests", digests: { api: D("d") }, candidates: { api: entry(D("c"), 0) } },
    ],
  },
  {
    name: "locked out with a young candidate: pending (no refresh is due yet), the build is still timed",
    c: soak6h,
    o: both(newApi, clock(T), (o) => ann(o, "refresh-attempt-api", "3")),
    outcome: "pending",
    actions: [write({ change: { [KEY]: entry(D("c"), 0) } })],
  },
  {
    name: "locked out with an aged candidate: the lockout holds it, flap marker written, candidates kept",
    c: soak6h,
    o: both(newApi, clock(T), listed(entry(D("c"), 7 * H)), (o) => ann(o, "refresh-attempt-api", "3")),
    outcome: "locked_out",
    actions: [
      write({ flaps: ["api"], change: { [`refresh-flap-detected-api`]: "3" } }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshLockedOut",
        note: expect.any(String) as unknown as string,
        image: "api",
      },
    ],
  },
  {
    name: "in sync under a soak with no candidates writes nothing",
    c: soak6h,
    o: clock(T),
    outcome: "noop",
    actions: [],
  },
  {
    name: "the tag moved back to the recorded build: the candidates seen since were withdrawn and are dropped",
    c: soak6h,
    o: both(clock(T), listed(entry(D("d"), 7 * H))),
    outcome: "noop",
    actions: [write({ change: { "candidates-api": null } })],
  },
  {
    name: "the tag moved back to an older candidate: the ones first seen after it are dropped, it waits on",
    c: soak6h,
    o: both(clock(T), newBuild(D("d")), listed(entry(D("e"), 1 * H), entry(D("d"), 2 * H))),
    outcome: "pending",
    actions: [write({ change: { "candidates-api": entry(D("d"), 2 * H) } })],
  },
];

describe("plan: minimumAge and candidates", () => {
  runCases(cases);

  test("pending says which build waits and when it is due, and the next one after it", () => {
    const o = observed(both(newApi, clock(T), listed(entry(D("d"), 2 * H))));
    const v = plan(o, config(soak6h)).images[0];
    expect(v?.outcome).toBe("pending");
    expect(v?.message).toContain(`build ${D("d")} waits out minimumAge 6h`);
    expect(v?.message).toContain(`due ${at(T + 4 * H)} (in 4h)`);
    expect(v?.message).toContain(`the tag now names ${D("c")} (due ${at(T + 6 * H)})`);
    expect(v?.short).toBe(`(due ${at(T + 4 * H)})`);
  });

  test("an unreadable candidates value is treated as empty and rewritten, with a warning naming it", () => {
    const o = observed(both(newApi, clock(T), listed("garbage", `${D("d")}=yesterday`)));
    const d = plan(o, config(soak6h));
    expect(d.outcome).toBe("pending");
    expect(d.actions).toEqual([write({ change: { [KEY]: entry(D("c"), 0) } })]);
    expect(d.images[0]?.warnings?.[0]).toContain('"garbage", "sha256:');
  });

  test("an unreadable entry beside readable ones: only it is dropped", () => {
    const o = observed(both(newApi, clock(T), listed(entry(D("d"), 7 * H), "oops")));
    const d = plan(o, config(soak6h));
    expect(d.images[0]?.digest).toBe(D("d"));
    expect(d.images[0]?.warnings).toHaveLength(1);
  });

  test("the API server's clock decides, not a time stored in the future", () => {
    const o = observed(both(newApi, clock(T), listed(entry(D("c"), -H))));
    expect(plan(o, config(soak6h)).outcome).toBe("pending");
  });

  test("a full list whose times tie with the tag's build, which trimming drops: pending, never a crash", () => {
    const ties = ["1", "c", "d", "4", "3"].map((x) => entry(D(x), 0));
    const o = observed(both(newBuild(D("3")), clock(T), listed(...ties, entry(D("7"), 1000))));
    const d = plan(o, config(soak6h));
    expect(d.outcome).toBe("pending");
    expect(d.images[0]?.message).toContain("not kept: the list holds at most 5");
  });

  test("a soak without a clock is a programming error, never a guessed time", () => {
    const o = observed(newApi);
    delete o.clock;
    expect(() => plan(o, config(soak6h))).toThrow(/clock/);
  });

  test("the stored list reads back newest first, duplicates once", () => {
    const p = parseCandidates(`${entry(D("d"), 2 * H)},${entry(D("c"), 1 * H)},${entry(D("d"), 3 * H)}`);
    expect(p.list.map((x) => x.digest)).toEqual([D("c"), D("d")]);
    expect(p.unreadable).toEqual([]);
  });
});

describe("plan: minimumAge over random histories", () => {
  // Not a (api's recorded digest) nor b (node-agent's).
  const digits = "123456789cdef".split("");
  // Up to 7 stored candidates (more than the 5 kept: a hand-edited list), seen 0..12 h ago.
  const history = fc.record({
    stored: fc.uniqueArray(
      fc.record({ d: fc.constantFrom(...digits), ago: fc.integer({ min: 0, max: 12 * 3600 }) }),
      {
        selector: (x) => x.d,
        maxLength: 7,
      },
    ),
    latest: fc.constantFrom(...digits),
  });

  test("what rolls out was seen minimumAge ago by the clock; the list keeps at most 5 and the oldest; pending rolls nothing", () => {
    fc.assert(
      fc.property(history, ({ stored, latest }) => {
        const list = stored.map((x) => entry(D(x.d), x.ago * 1000));
        const o = observed(both(newBuild(D(latest)), clock(T), listed(...list)));
        const d = plan(o, config(soak6h));
        const rolled = d.actions.filter((a) => a.type === "rollout" && a.images.includes("api"));
        const seen = new Map(stored.map((x) => [D(x.d), T - x.ago * 1000]));
        // The tag moved back to an older candidate: the builds first seen after it were withdrawn.
        const back = seen.get(D(latest));
        if (back !== undefined) for (const [dg, at] of seen) if (at > back) seen.delete(dg);
        if (!seen.has(D(latest))) seen.set(D(latest), T);
        const v = d.images[0];
        if (v?.outcome === "pending") expect(rolled).toEqual([]);
        else {
          expect(v?.outcome).toBe("refreshed");
          expect(T - (seen.get(v?.digest as string) as number)).toBeGreaterThanOrEqual(6 * H);
          // The newest aged one: nothing newer than it has aged.
          for (const [, at] of seen)
            if (at > (seen.get(v?.digest as string) as number)) expect(T - at).toBeLessThan(6 * H);
        }
        const w = d.actions.find((a) => a.type === "write-state");
        const written = w?.type === "write-state" ? w.change[KEY] : undefined;
        const stored0 = o.book.images.api?.candidates;
        const after = parseCandidates(
          written ?? (stored0?.kind === "absent" ? undefined : stored0?.raw),
        ).list;
        expect(after.length).toBeLessThanOrEqual(5);
        // The oldest first-seen time stays (with ties, one of the builds seen then).
        expect(Math.min(...after.map((x) => x.seen))).toBe(Math.min(...seen.values()));
      }),
      { numRuns: 300 },
    );
  });
});
