// The repin streak guard (a tag re-rendered again before every target was found pinned is a
// contested pin, not another re-pin) over several ticks of plan(): between two re-pins of an image
// there is always a tick that found every target settled and pinned to R. Each tick's writes are
// carried into the next tick's store as if every write and rollout went through; between ticks the
// targets either keep what the tick rolled out, get the floating tag rendered back over it by a
// deploy tool (helm), or are a fresh random world.
import { expect, test } from "bun:test";
import fc from "fast-check";
import type { Config } from "../../lib/config.ts";
import type { Decision, Observed, ObservedWorkload } from "../../lib/tick/model.ts";
import { plan } from "../../lib/tick/plan/plan.ts";
import { bookFor, type Case, configArb, observedArb } from "./arbitraries.ts";
import { of, verdict } from "./decision.ts";
import type { LiveTruth, Truth } from "./live-images.ts";
import { dataOf, stored } from "./oracle.ts";
import { foreignOffPin, judge, onThePin } from "./oracle-verdict.ts";

const RUNS = Number(process.env.PLAN_PROPERTY_RUNS ?? 2000);

/** The store's data after a decision, every write and rollout having gone through. */
function carryData(a: Record<string, string>, d: Decision): Record<string, string> {
  const next = { ...a };
  const put = (n: string, v: string | null) => {
    if (v === null) delete next[n];
    else next[n] = v;
  };
  for (const x of d.actions) {
    if (x.type === "record-digests") {
      for (const [key, v] of Object.entries(x.digests)) put(`last-refreshed-${key}-digest`, v);
      for (const [key, v] of Object.entries(x.candidates ?? {})) put(`candidates-${key}`, v);
    }
    if (x.type === "reset")
      for (const key of Object.keys(x.counts))
        for (const n of ["refresh-attempt-", "refresh-flap-detected-", "refresh-attempt-traceparent-"])
          delete next[`${n}${key}`];
    if (x.type === "reset") for (const key of Object.keys(x.counts)) delete next[`failed-${key}-digest`];
    if (x.type !== "write-state") continue;
    for (const [n, v] of Object.entries(x.change)) put(n, v);
    for (const [key, at] of Object.entries(x.attempts)) {
      next[`refresh-attempt-${key}`] = String(at.count);
      next[`failed-${key}-digest`] = at.digest;
    }
  }
  return next;
}

type Between = "carry" | "rerender" | "fresh";

/** The targets after the tick's rollouts, and then perhaps a deploy tool's re-render of them. */
function carryTargets(c: Config, prev: Case, d: Decision, between: Between) {
  const workloads = structuredClone(prev.o.workloads ?? {});
  const truth: Truth = structuredClone(prev.t);
  for (const r of of(d, "rollout")) {
    const id = `${r.workload.kind}/${r.workload.namespace}/${r.workload.name}`;
    const w = workloads[id] as ObservedWorkload & { found: true };
    // the rollout went through: the workload settled on it
    w.settled = true;
    for (const ct of r.containers) {
      const img = c.images.find(
        (i) => r.images.includes(i.key) && i.targets.some((t) => t.container === ct.name),
      );
      const rendered = between === "rerender" && img !== undefined;
      const live: LiveTruth = rendered
        ? {
            image: `${c.registry.host}/${img.repository}:${c.tag}`,
            kind: "floating",
            ours: false,
            owners: [HELM],
          }
        : { image: ct.image, kind: "digest", digest: ct.image.split("@")[1], ours: true, owners: [OURS] };
      w.images[ct.name] = live.image;
      w.owners = { ...w.owners, [ct.name]: live.owners };
      (truth[id] as Record<string, LiveTruth>)[ct.name] = live;
    }
  }
  return { workloads, truth };
}
const HELM = { manager: "helm", operation: "Update", time: "2026-12-01T12:00:00Z" };
const OURS = { manager: "image-refresh", operation: "Update", time: "2026-12-01T12:00:00Z" };

const storyArb = configArb.chain((c) =>
  fc.record({
    c: fc.constant(c),
    first: observedArb(c),
    steps: fc.array(
      fc.record({
        fresh: observedArb(c),
        between: fc.constantFrom<Between>("carry", "rerender", "rerender", "fresh"),
        // the registry often still serves what the last tick saw
        sameDigests: fc.boolean(),
      }),
      { minLength: 2, maxLength: 5 },
    ),
  }),
);

/** The next tick's observation: its own random parts, the carried store and targets. */
function nextTick(prev: Case, d: Decision, s: ValueOf<typeof storyArb>["steps"][number]): Case {
  const { c } = prev;
  const o: Observed = structuredClone(s.fresh.o);
  o.book = bookFor(c, carryData(dataOf(prev.o), d));
  if (s.sameDigests && prev.o.digests) o.digests = structuredClone(prev.o.digests);
  if (s.between === "fresh" || !prev.o.workloads) return { c, o, t: s.fresh.t };
  const { workloads, truth } = carryTargets(c, prev, d, s.between);
  o.workloads = workloads;
  return { c, o, t: truth };
}
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

let contests = 0;
test("streak guard: between two re-pins of an image there is a tick that found every target pinned to R", () => {
  fc.assert(
    fc.property(storyArb, ({ c, first, steps }) => {
      let now: Case = { c, ...first };
      // a streak already there is a re-pin of an earlier story
      const armed = new Map(
        c.images.map((i) => [i.key, stored(now.o, `repin-streak-${i.key}`) === undefined]),
      );
      let repinned = new Set<string>();
      for (let i = 0; ; i++) {
        const d = plan(now.o, c);
        const last = repinned;
        repinned = new Set();
        for (const img of c.images) {
          const v = verdict(d, img.key);
          if (v?.reason === "pin_restored") {
            // A re-pin of what image-refresh's own revert put back is that re-pin's next attempt.
            if (foreignOffPin(c, now.o, now.t, img.key)) expect(armed.get(img.key)).toBe(true);
            armed.set(img.key, false);
            repinned.add(img.key);
          } else if (judge(c, now.o, now.t, img.key).targetsOk && onThePin(c, now.o, now.t, img.key))
            armed.set(img.key, true);
          if (v?.reason === "pin_contested" && last.has(img.key)) contests++;
        }
        const s = steps[i];
        if (!s) break;
        now = nextTick(now, d, s);
      }
    }),
    { numRuns: RUNS },
  );
  // not vacuous: re-renders after a re-pin were met, and refused
  expect(contests).toBeGreaterThan(0);
}, 60_000);
