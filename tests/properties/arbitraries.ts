// fast-check generators for the pure plan properties: random configurations over a small pool
// of workloads, and random observations of the state object, the registry and the targets.
// The pool is small on purpose, so that random digests collide with recorded ones often and
// every branch of plan() (noop, record, refresh, lockout, held, skip, freeze) is reached.
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
      images,
    };
    const text = JSON.stringify(doc);
    const c = parsed.get(text) ?? parseConfig(text, {});
    parsed.set(text, c);
    // plan() must not depend on sharing: hand out a copy.
    return structuredClone(c);
  });

const digestObs = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...DIGESTS).map((digest) => ({ ok: true as const, digest })) },
  { weight: 1, arbitrary: fc.constant({ ok: false as const, message: "timeout" }) },
);

const workloadObs = (containers: string[]): fc.Arbitrary<ObservedWorkload | undefined> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .subarray(containers, { minLength: 0 })
        .map((names) => ({ found: true as const, images: Object.fromEntries(names.map((n) => [n, "x"])) })),
    },
    { weight: 1, arbitrary: fc.constant({ found: false as const, message: "Forbidden (403)" }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

/** An observation that fits the given configuration, with every field random. */
export function observedArb(c: Config): fc.Arbitrary<Observed> {
  const keys = c.images.map((i) => i.key);
  const workloadIds = [...new Set(SLOTS.map((s) => `${s.kind}/${s.namespace}/${s.name}`))];
  const containersOf = (id: string) =>
    SLOTS.filter((s) => `${s.kind}/${s.namespace}/${s.name}` === id).map((s) => s.container);
  return fc
    .record({
      settled: fc.boolean(),
      attempt: counterValue,
      streak: counterValue,
      flap: fc.option(fc.constantFrom("3", "1", "x"), { nil: undefined }),
      recorded: fc.tuple(...keys.map(() => fc.option(fc.constantFrom(...DIGESTS), { nil: undefined }))),
      digests: fc.tuple(...keys.map(() => digestObs)),
      workloads: fc.tuple(...workloadIds.map((id) => workloadObs(containersOf(id)))),
      junk: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
    })
    .map((r) => {
      const annotations: Record<string, string> = { ...r.junk };
      const set = (k: string, v: string | undefined) => {
        if (v !== undefined) annotations[`${PREFIX}/${k}`] = v;
      };
      set("refresh-attempt", r.attempt);
      set("refresh-skip-streak", r.streak);
      set("refresh-flap-detected", r.flap);
      keys.forEach((k, i) => {
        set(`last-refreshed-${k}-digest`, r.recorded[i]);
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
      return o;
    });
}

export const caseArb = configArb.chain((c) => observedArb(c).map((o) => ({ c, o })));
