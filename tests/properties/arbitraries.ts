// fast-check generators for the pure plan properties: random configurations over a small pool of
// workloads (so images share workloads often), and random books of the store (per-image counters,
// flap markers, failed digests, skip, unresolved and repin streaks, pause markers, candidates,
// rejected digests, trusted or not; now and then no store at all), the registry (digests or
// failures with a reason) and the targets: each workload read or not, settled or not, and each
// container's live image in every class the per-image verdict tells apart (pinned to R, to L, to
// another digest; the floating tag; another tag; another repository), spelled in the forms a
// runtime normalises, with its last writer (image-refresh, a human, a tool, nobody on record). The
// truth about each container comes with the case. The pools are small on purpose, so that random
// digests collide with recorded and rejected ones often and every verdict plan() can reach is
// reached.
import fc from "fast-check";
import { type Config, parseConfig } from "../../lib/config.ts";
import { parseBook } from "../../lib/state/book.ts";
import type { Observed, ObservedDigest, ObservedWorkload } from "../../lib/tick/model.ts";
import { type LiveTruth, liveImage, MANAGERS, type Truth } from "./live-images.ts";
import { humanPinOf } from "./oracle-verdict.ts";

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

/** A value one time in n, else undefined (fc.option's `freq` is the odds of nil, not of a value). */
const oneIn = <T>(n: number, arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

/** Untrusted counter values as humans and scripts write them: anything but one to nine plain digits. */
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
    reconcile: fc.constantFrom("repin", "repin", "report"),
  })
  .filter((r) => r.owners.some((o) => o >= 0))
  .map((r) => {
    const images = REPOS.map((repository, i) => ({
      repository,
      pinned: r.pinned[i],
      targets: SLOTS.filter((_, s) => r.owners[s] === i).map((t) => ({ ...t })),
    })).filter((img) => img.targets.length > 0);
    const doc = {
      tag: "stable",
      registry: { host: r.host },
      store: { namespace: "image-refresh", name: "image-refresh-state" },
      maxRefreshAttempts: r.maxRefreshAttempts,
      maxSkipTicks: r.maxSkipTicks,
      maxUnresolvedTicks: r.maxUnresolvedTicks,
      reconcile: r.reconcile,
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

/** How a workload read went: every container, some of them, Forbidden, not read, or unable to roll. */
const workloadShape = fc.oneof(
  { weight: 30, arbitrary: fc.constant({ shape: "full" as const }) },
  { weight: 2, arbitrary: fc.constant({ shape: "some" as const }) },
  { weight: 1, arbitrary: fc.constant({ shape: "forbidden" as const }) },
  { weight: 1, arbitrary: fc.constant({ shape: "unread" as const }) },
  { weight: 1, arbitrary: fc.constant({ shape: "blocked" as const }) },
);

/**
 * What a target container's live image is, as a class the generator knows (the oracle reads the
 * class, never the string): pinned to R, to L, to another digest; the floating tag; another tag;
 * another repository. `form` picks a spelling, `who` the field manager that last wrote it.
 */
const liveArb = fc.record({
  cls: fc.oneof(
    { weight: 8, arbitrary: fc.constant("R" as const) },
    { weight: 2, arbitrary: fc.constant("L" as const) },
    { weight: 1, arbitrary: fc.constant("digest" as const) },
    { weight: 3, arbitrary: fc.constant("floating" as const) },
    { weight: 1, arbitrary: fc.constant("other_tag" as const) },
    { weight: 1, arbitrary: fc.constant("other_repo" as const) },
  ),
  form: fc.nat(11),
  digest: fc.constantFrom(...DIGESTS, D("9")),
  who: fc.constantFrom(...MANAGERS),
});
export type LiveChoice = ValueOf<typeof liveArb>;

/** One image's own bookkeeping in the store (its keys in lib/state/keys.ts). */
const imageStateArb = fc.record({
  recorded: fc.option(fc.constantFrom(...DIGESTS), { nil: undefined, freq: 4 }),
  attempt: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: counterValue }),
  flap: oneIn(3, fc.constantFrom("3", "1", "x")),
  // the digest whose rollout failed last (stored with each attempt)
  failed: oneIn(4, fc.constantFrom(...DIGESTS)),
  skip: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: counterValue }),
  unresolved: fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: counterValue },
  ),
  rejected: oneIn(6, fc.constantFrom(...DIGESTS)),
  // the registry still serves the recorded digest half the time: in sync, re-rendered, paused
  unchanged: fc.boolean(),
  // 1: a re-pin last tick; 2: a contest announced; anything else: a hand edit
  repin: fc.oneof(
    { weight: 8, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constant("1") },
    { weight: 1, arbitrary: fc.constant("2") },
    { weight: 1, arbitrary: untrustedCounter },
  ),
  // the pause marker: the pin that pauses the image now, or one that did once
  paused: fc.constantFrom("none", "none", "none", "current", "stale"),
  candidates: oneIn(
    4,
    fc.constantFrom(
      `${D("9")}=2026-12-01T10:00:00Z`,
      `${D("c")}=2026-12-01T09:00:00Z,${D("9")}=2026-12-01T10:00:00Z`,
    ),
  ),
});

const WORKLOAD_IDS = [...new Set(SLOTS.map((s) => `${s.kind}/${s.namespace}/${s.name}`))];
const slotId = (s: { kind: string; namespace: string; name: string }) => `${s.kind}/${s.namespace}/${s.name}`;

/** The targets' side of a world: how each workload read went and what each container runs. */
const liveWorldArb = fc.record({
  // a third of the worlds are tidy: every container on its recorded pin, written by image-refresh
  tidy: fc.nat(2).map((n) => n === 0),
  shapes: fc.tuple(...WORKLOAD_IDS.map(() => workloadShape)),
  // kubectl rollout status' verdict per workload: mostly settled, so most images get past the guard
  settled: fc.tuple(...WORKLOAD_IDS.map(() => fc.nat(4).map((n) => n > 0))),
  keep: fc.array(fc.boolean(), { minLength: SLOTS.length, maxLength: SLOTS.length }),
  slots: fc.tuple(...SLOTS.map(() => liveArb)),
});
export type LiveWorld = ValueOf<typeof liveWorldArb>;

const TIDY: LiveChoice = { cls: "R", form: 0, digest: D("a"), who: "image-refresh" };

/** The observed workloads and the truth about them, for a config, its state and registry answers. */
export function liveWorld(
  c: Config,
  world: LiveWorld,
  pin: (key: string) => { recorded?: string; registry?: string },
): { workloads: Record<string, ObservedWorkload>; truth: Truth } {
  const workloads: Record<string, ObservedWorkload> = {};
  const truth: Truth = {};
  WORKLOAD_IDS.forEach((id, w) => {
    const shape = world.shapes[w]?.shape ?? "full";
    if (shape === "unread") return;
    if (shape === "forbidden") {
      workloads[id] = { found: false, message: "Forbidden (403)" };
      return;
    }
    const settled = world.settled[w] ?? true;
    const read: ObservedWorkload & { found: true } = {
      found: true,
      images: {},
      owners: {},
      settled,
      settleMessage: settled
        ? "successfully rolled out"
        : "Waiting for rollout to finish: 1 of 2 updated replicas are available",
    };
    if (shape === "blocked") read.blocked = "updateStrategy OnDelete";
    truth[id] = {};
    SLOTS.forEach((s, i) => {
      if (slotId(s) !== id || (shape === "some" && !world.keep[i])) return;
      const img = c.images.find((x) =>
        x.targets.some((t) => slotId(t) === id && t.container === s.container),
      );
      const choice = world.tidy ? TIDY : (world.slots[i] as LiveChoice);
      const input = img
        ? { host: c.registry.host, repository: img.repository, tag: c.tag, ...pin(img.key) }
        : { host: c.registry.host, repository: "myorg/unrelated", tag: c.tag };
      const t = liveImage(input, choice);
      read.images[s.container] = t.image;
      (read.owners as Record<string, unknown>)[s.container] = t.owners;
      (truth[id] as Record<string, LiveTruth>)[s.container] = t;
    });
    workloads[id] = read;
  });
  return { workloads, truth };
}

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;
type ImageState = ValueOf<typeof imageStateArb>;

/** The store's data for the generated bookkeeping (the pause marker comes later). */
function storeData(
  keys: string[],
  images: ImageState[],
  junk: Record<string, string>,
): Record<string, string> {
  const data: Record<string, string> = { ...junk };
  const set = (k: string, v: string | undefined) => {
    if (v !== undefined) data[k] = v;
  };
  keys.forEach((k, i) => {
    const s = images[i] as ImageState;
    set(`last-refreshed-${k}-digest`, s.recorded);
    set(`refresh-attempt-${k}`, s.attempt);
    set(`refresh-flap-detected-${k}`, s.flap);
    set(`failed-${k}-digest`, s.failed);
    set(`skip-streak-${k}`, s.skip);
    set(`unresolved-streak-${k}`, s.unresolved);
    set(`rejected-${k}-digest`, s.rejected);
    set(`repin-streak-${k}`, s.repin);
    set(`candidates-${k}`, s.candidates);
  });
  return data;
}

/** The observed book for that data: no ConfigMap (NotFound) when it is empty and `absent`. */
export function bookFor(c: Config, data: Record<string, string>, absent = false) {
  const keys = c.images.map((i) => i.key);
  const none = absent && Object.keys(data).length === 0;
  return parseBook(none ? undefined : { resourceVersion: "7", data }, keys);
}

/**
 * The pause marker as a tick would have left it: the image of the pin that pauses the image now
 * (announced already), or of one that paused it once; the oracle says which pin pauses.
 */
function markPauses(
  c: Config,
  o: Observed,
  t: Truth,
  states: ImageState[],
  data: Record<string, string>,
): void {
  let marked = false;
  c.images.forEach((img, i) => {
    const want = states[i]?.paused;
    if (want === "none") return;
    marked = true;
    const pin = want === "current" ? humanPinOf(c, o, t, img.key) : undefined;
    const image = pin?.image ?? `${c.registry.host}/${img.repository}@${D("8")}`;
    data[`paused-${img.key}`] = image;
  });
  if (marked) o.book = bookFor(c, data);
}

export interface Case {
  c: Config;
  o: Observed;
  /** What every container read runs, by construction. */
  t: Truth;
}

/** An observation that fits the given configuration, with every field random. */
export function observedArb(c: Config): fc.Arbitrary<Omit<Case, "c">> {
  const keys = c.images.map((i) => i.key);
  return fc
    .record({
      images: fc.tuple(...keys.map(() => imageStateArb)),
      digests: fc.tuple(...keys.map(() => digestObs)),
      live: liveWorldArb,
      claimed: oneIn(8, fc.subarray(keys, { minLength: 1 })),
      junk: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
      absent: fc.boolean(),
    })
    .map((r) => {
      const data = storeData(keys, r.images, r.junk);
      const o: Observed = { book: bookFor(c, data, r.absent) };
      o.digests = Object.fromEntries(
        keys.map((k, i) => {
          const seen = r.digests[i] as ObservedDigest;
          const recorded = data[`last-refreshed-${k}-digest`];
          const same = seen.ok && recorded !== undefined && r.images[i]?.unchanged;
          return [k, same ? { ok: true as const, digest: recorded } : seen];
        }),
      );
      const pin = (key: string) => {
        const seen = o.digests?.[key];
        return {
          recorded: data[`last-refreshed-${key}-digest`],
          registry: seen?.ok ? seen.digest : undefined,
        };
      };
      const { workloads, truth } = liveWorld(c, r.live, pin);
      o.workloads = workloads;
      if (r.claimed) o.claimed = r.claimed;
      markPauses(c, o, truth, r.images, data);
      return { o, t: truth };
    });
}

export const caseArb: fc.Arbitrary<Case> = configArb.chain((c) => observedArb(c).map((x) => ({ c, ...x })));
