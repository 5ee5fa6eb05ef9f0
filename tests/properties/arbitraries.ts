// fast-check generators for the pure plan properties: random configurations over a small pool
// of workloads (so images share workloads often), and random observations of the state object
// (per-image and legacy counters, flap markers, unresolved streaks, rejected digests, trusted or
// not), the registry (digests or failures with a reason) and the targets. The pool is small on
// purpose, so that random digests collide with recorded and rejected ones often and every
// verdict plan() can reach is reached.
import fc from "fast-check";
import { type Config, parseConfig } from "../../lib/config.ts";
import type { Observed, ObservedWorkload } from "../../lib/tick/model.ts";

export const PREFIX = "image-refresh.io";
export const D = (c: string) => `sha256:${c.repeat(64)}`;
export const DIGESTS = [D("a"), D("b"), D("c")];

/** Container slots: a workload and one of its containers. */
const SLOTS = [
  { kind: "Deployment", namespace: "apps", name: "api", container: "api" },
  { kind: "Deployment", namespace: "apps", name: "api", container: "sidecar" },
  { kind: "Deployment", namespace: "apps", name: "api-proxy", container: "proxy" },
  { kind: "DaemonSet", namespace: "agents", name: "node-agent", container: "agent" },
  { kind: "StatefulSet", namespace: "apps", name: "db", container: "db" },
] as const;
const REPOS = ["myorg/api", "myorg/node-agent", "myorg/db"];

/** Untrusted counter values as humans and scripts write them (SPEC "Trusted integers"). */
export const untrustedCounter = fc.oneof(
  fc.constantFrom("", "abc", "-1", "+1", "1e3", " 2", "2 ", "2a", "1.0", "0x1", "1234567890", "٣"),
  fc.string({ maxLength: 12 }).filter((s) => !/^[0-9]{1,9}$/.test(s)),
);
export const counterValue = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 7 }).map(String) },
  { weight: 1, arbitrary: untrustedCounter },
);

const parsed = new Map<string, Config>();

export const configArb: fc.Arbitrary<Config> = fc
  .record({
    // Each slot goes to one image (by index) or to none; one container never belongs to two images.
    owners: fc.array(fc.integer({ min: -1, max: 2 }), { minLength: SLOTS.length, maxLength: SLOTS.length }),
    pinned: fc.array(
      fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
      { minLength: 3, maxLength: 3 },
    ),
    maxRefreshAttempts: fc.integer({ min: 1, max: 5 }),
    maxSkipTicks: fc.integer({ min: 1, max: 5 }),
    maxUnresolvedTicks: fc.integer({ min: 1, max: 4 }),
    host: fc.constantFrom("docker.io", "registry.example.com:5000", "127.0.0.1:5000"),
    stateIndex: fc.integer({ min: 0, max: SLOTS.length - 1 }),
  })
  .filter((r) => r.owners.some((o) => o >= 0))
  .map((r) => {
    const images = REPOS.map((repository, i) => ({
      repository,
      pinned: r.pinned[i],
      targets: SLOTS.filter((_, s) => r.owners[s] === i).map((t) => ({ ...t })),
    })).filter((img) => img.targets.length > 0);
    const st = SLOTS[r.stateIndex] as (typeof SLOTS)[number];
    const doc = {
      tag: "stable",
      registry: { host: r.host },
      state: { kind: st.kind, namespace: st.namespace, name: st.name },
      maxRefreshAttempts: r.maxRefreshAttempts,
      maxSkipTicks: r.maxSkipTicks,
      maxUnresolvedTicks: r.maxUnresolvedTicks,
      images,
    };
    const text = JSON.stringify(doc);
    const c = parsed.get(text) ?? parseConfig(text, {});
    parsed.set(text, c);
    // plan() must not depend on sharing: hand out a copy.
    return structuredClone(c);
  });

/** Registry failures carry the client's reason, which the unresolved verdict names. */
const FAILURES = ["not_found", "unauthorized", "rate_limited", "timeout", "server_error"];
const digestObs = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...DIGESTS).map((digest) => ({ ok: true as const, digest })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(...FAILURES)
      .map((failure) => ({ ok: false as const, failure, message: `manifest HEAD: ${failure}` })),
  },
);

const workloadObs = (containers: string[]): fc.Arbitrary<ObservedWorkload | undefined> =>
  fc.oneof(
    // mostly every container there, so that refreshes are due often enough to meet the rules
    {
      weight: 6,
      arbitrary: fc.constant({
        found: true as const,
        images: Object.fromEntries(containers.map((n) => [n, "x"])),
      }),
    },
    {
      weight: 2,
      arbitrary: fc
        .subarray(containers, { minLength: 0 })
        .map((names) => ({ found: true as const, images: Object.fromEntries(names.map((n) => [n, "x"])) })),
    },
    { weight: 1, arbitrary: fc.constant({ found: false as const, message: "Forbidden (403)" }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

/** One image's own bookkeeping on the state object (SPEC "State annotations", per image). */
const imageStateArb = fc.record({
  recorded: fc.option(fc.constantFrom(...DIGESTS), { nil: undefined, freq: 4 }),
  attempt: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: counterValue }),
  flap: fc.option(fc.constantFrom("3", "1", "x"), { nil: undefined, freq: 3 }),
  unresolved: fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: counterValue },
  ),
  rejected: fc.option(fc.constantFrom(...DIGESTS), { nil: undefined, freq: 4 }),
});

/** The single counter of earlier versions; sometimes under another prefix, which counts too. */
const legacyArb = fc.record({
  prefix: fc.constantFrom(PREFIX, PREFIX, "tracebloc.io"),
  attempt: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: counterValue }),
  flap: fc.option(fc.constantFrom("3", "1"), { nil: undefined, freq: 4 }),
  traceparent: fc.option(fc.constant("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), {
    nil: undefined,
    freq: 4,
  }),
});

/** An observation that fits the given configuration, with every field random. */
export function observedArb(c: Config): fc.Arbitrary<Observed> {
  const keys = c.images.map((i) => i.key);
  const workloadIds = [...new Set(SLOTS.map((s) => `${s.kind}/${s.namespace}/${s.name}`))];
  const containersOf = (id: string) =>
    SLOTS.filter((s) => `${s.kind}/${s.namespace}/${s.name}` === id).map((s) => s.container);
  return fc
    .record({
      settled: fc.boolean(),
      skipStreak: counterValue,
      legacy: legacyArb,
      otherLegacy: fc.option(fc.constantFrom("0", "1", "2"), { nil: undefined, freq: 8 }),
      images: fc.tuple(...keys.map(() => imageStateArb)),
      digests: fc.tuple(...keys.map(() => digestObs)),
      workloads: fc.tuple(...workloadIds.map((id) => workloadObs(containersOf(id)))),
      claimed: fc.option(fc.subarray(keys, { minLength: 1 }), { nil: undefined, freq: 8 }),
      junk: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
    })
    .map((r) => {
      const annotations: Record<string, string> = { ...r.junk };
      const set = (k: string, v: string | undefined, prefix = PREFIX) => {
        if (v !== undefined) annotations[`${prefix}/${k}`] = v;
      };
      set("refresh-skip-streak", r.skipStreak);
      set("refresh-attempt", r.legacy.attempt, r.legacy.prefix);
      set("refresh-flap-detected", r.legacy.flap, r.legacy.prefix);
      set("refresh-attempt-traceparent", r.legacy.traceparent, r.legacy.prefix);
      // now and then an installation that changed its prefix carries the old keys under both
      set("refresh-attempt", r.otherLegacy, r.legacy.prefix === PREFIX ? "tracebloc.io" : PREFIX);
      keys.forEach((k, i) => {
        const s = r.images[i] as (typeof r.images)[number];
        set(`last-refreshed-${k}-digest`, s.recorded);
        set(`refresh-attempt-${k}`, s.attempt);
        set(`refresh-flap-detected-${k}`, s.flap);
        set(`unresolved-streak-${k}`, s.unresolved);
        set(`rejected-${k}-digest`, s.rejected);
      });
      const o: Observed = {
        state: { annotations, settled: r.settled, settleMessage: r.settled ? "done" : "waiting" },
      };
      if (!r.settled) return o;
      o.digests = Object.fromEntries(keys.map((k, i) => [k, r.digests[i] as never]));
      o.workloads = {};
      workloadIds.forEach((id, i) => {
        const w = r.workloads[i];
        if (w && o.workloads) o.workloads[id] = w;
      });
      if (r.claimed) o.claimed = r.claimed;
      return o;
    });
}

export const caseArb = configArb.chain((c) => observedArb(c).map((o) => ({ c, o })));
