// What `status` reports: the tick's own observation and plan (observe.ts, plan/plan.ts), so an
// image's verdict is the one the next tick reaches whichever images are named; the names narrow
// only what is printed. What the tick does not read (the targets of pinned images; the registry
// and the targets while the state object is unsettled) is read for display only, after the plan.
import { annotationKeys, imageCounters } from "../annotations.ts";
import type { Config } from "../config.ts";
import type { ImageVerdict, Observed, ObservedDigest, ObservedWorkload } from "../tick/model.ts";
import { observe, observeWorkload, registryNotBefore } from "../tick/observe.ts";
import { dueAt, parseCandidates, stamp } from "../tick/plan/candidates.ts";
import { type LiveContainer, liveImage, noSuchContainer } from "../tick/plan/live.ts";
import { plan } from "../tick/plan/plan.ts";
import { describeWorkload, distinctTargets, stateRef, workloadId } from "../workload.ts";
import { nextStep } from "./next-step.ts";
import type { Runtime } from "./runtime.ts";

export interface TargetStatus {
  workload: string;
  container: string;
  image?: string;
  pinnedDigest?: string;
  matchesRecorded: boolean;
  error?: string;
  /** Why a refresh would be held at this target (OnDelete, paused): it can start no rollout. */
  blocked?: string;
  /**
   * What the container runs against the config: `in_sync` (pinned to the recorded digest),
   * `pinned_elsewhere`, `floating` (the tag without a digest), `other_tag`, `other_repo`.
   */
  classification?: "in_sync" | "pinned_elsewhere" | "floating" | "other_tag" | "other_repo";
  /** Who last changed the image field, from managedFields; absent when nobody is on record. */
  lastChangedBy?: { manager: string; operation: string; time?: string };
}

export interface ImageStatus {
  key: string;
  repository: string;
  pinned: boolean;
  recordedDigest: string | null;
  registryDigest: string | null;
  registryError?: string;
  attemptCount: string | null;
  maxRefreshAttempts: number;
  flapDetected: string | null;
  unresolvedStreak: string | null;
  maxUnresolvedTicks: number;
  rejectedDigest: string | null;
  /** The verdict the next tick would reach, with its reason and sentence. */
  verdict: { outcome: string; reason: string; message: string };
  /** The one command (or step) that helps. */
  next: string;
  targets: TargetStatus[];
  /** minimumAge: the builds waiting out their age, newest first, by the API server's clock. */
  candidates?: CandidateStatus[];
}

export interface CandidateStatus {
  digest: string;
  firstSeen: string;
  /** Seconds since first seen, by the API server's clock. */
  ageSeconds: number;
  dueAt: string;
  /** It has been seen for minimumAge: the next tick may roll it out. */
  due: boolean;
}

export interface StatusReport {
  state: { workload: string; settled: boolean; message: string };
  skipStreak: string | null;
  maxSkipTicks: number;
  /** Legacy single-counter keys still present (they count for every image). */
  legacy: Record<string, string>;
  images: ImageStatus[];
  /** Set when the registry was asked anonymously although the config names a pull secret. */
  anonymousRegistry?: string;
}

export async function buildReport(rt: Runtime, named: readonly string[] = []): Promise<StatusReport> {
  const c = rt.config;
  const ctx = rt.tickContext(true);
  const obs = await observe(ctx);
  const settled = obs.observed.state.settled;
  const verdicts = new Map(plan(obs.observed, c).images.map((v) => [v.key, v]));
  const wanted = c.images.filter((i) => named.length === 0 || named.includes(i.key));
  const shown = await forDisplay(rt, obs, wanted);
  // Ages are told by the API server's clock, as the tick judges them.
  const clock = obs.observed.clock ?? Math.floor(Date.now() / 1000) * 1000;
  const a = obs.state.metadata.annotations;
  const keys = annotationKeys(c.annotationPrefix);
  const images = wanted.map((img): ImageStatus => {
    const counters = imageCounters(a, c.annotationPrefix, img.key);
    const r = shown.digests?.[img.key];
    const recorded = a[keys.digest(img.key)] ?? null;
    const v = verdicts.get(img.key);
    const containers = liveImage(img, shown, c)?.containers ?? [];
    return {
      key: img.key,
      repository: img.repository,
      pinned: img.pinned,
      recordedDigest: recorded,
      registryDigest: r?.ok ? r.digest : null,
      registryError: r && !r.ok ? `${r.failure}: ${r.message}` : undefined,
      attemptCount: counters.attemptFrom ? (a[counters.attemptFrom] ?? null) : null,
      maxRefreshAttempts: c.maxRefreshAttempts,
      flapDetected: counters.flap ?? null,
      unresolvedStreak: a[keys.image(img.key).unresolved] ?? null,
      maxUnresolvedTicks: c.maxUnresolvedTicks,
      rejectedDigest: counters.rejected ?? null,
      ...candidatesOf(a[keys.image(img.key).candidates], clock, c),
      verdict: verdictOf(v, settled, c),
      next: nextStep(img.key, v, settled, c),
      targets: img.targets.map((t) => ({
        ...targetStatus(shown.workloads?.[workloadId(t)], describeWorkload(t), t.container, recorded),
        ...classified(
          containers.find((x) => x.target === t),
          recorded,
        ),
      })),
    };
  });
  return {
    state: { workload: describeWorkload(c.state), settled, message: obs.observed.state.settleMessage },
    skipStreak: a[keys.skipStreak] ?? null,
    maxSkipTicks: c.maxSkipTicks,
    legacy: Object.fromEntries(
      Object.entries(keys.legacy).flatMap(([, k]) => (a[k] !== undefined ? [[k, a[k]]] : [])),
    ),
    images,
  };
}

/**
 * The observation widened, for display only, by what the printed images need and the tick did not
 * read: their targets (each once, the state object not again) and, while unsettled, their
 * registry digests (respecting a stored Retry-After like a tick: the quota is the workloads').
 */
async function forDisplay(
  rt: Runtime,
  obs: Awaited<ReturnType<typeof observe>>,
  wanted: Config["images"],
): Promise<Observed> {
  const o = obs.observed;
  const workloads: Record<string, ObservedWorkload> = { ...o.workloads };
  const stateId = workloadId(stateRef(rt.config));
  const unread = distinctTargets({ images: wanted }).filter((t) => workloads[workloadId(t)] === undefined);
  const reads = await Promise.all(
    unread.map(async (t): Promise<ObservedWorkload> => {
      if (workloadId(t) === stateId) return observeWorkload(obs.state);
      return rt.kube.get(t).then(observeWorkload, (e: Error) => ({ found: false, message: e.message }));
    }),
  );
  unread.forEach((t, i) => {
    workloads[workloadId(t)] = reads[i] as ObservedWorkload;
  });
  return { ...o, workloads, digests: o.digests ?? (await unsettledDigests(rt, obs, wanted)) };
}

async function unsettledDigests(
  rt: Runtime,
  obs: Awaited<ReturnType<typeof observe>>,
  wanted: Config["images"],
): Promise<Record<string, ObservedDigest>> {
  const c = rt.config;
  const repos = [...new Set(wanted.filter((i) => !i.pinned).map((i) => i.repository))];
  if (repos.length === 0) return {};
  const notBefore = registryNotBefore(obs.state.metadata.annotations, c.annotationPrefix, Date.now());
  const results = await rt.tickContext(true).resolve(repos, { notBefore });
  const out: Record<string, ObservedDigest> = {};
  for (const img of wanted) {
    const r = results.get(img.repository);
    if (r)
      out[img.key] = r.ok
        ? { ok: true, digest: r.digest }
        : { ok: false, failure: r.reason, message: r.message };
  }
  return out;
}

function candidatesOf(raw: string | undefined, clock: number, c: Config): Pick<ImageStatus, "candidates"> {
  if (raw === undefined && c.minimumAgeMs === 0) return {};
  const candidates = parseCandidates(raw).list.map((x) => ({
    digest: x.digest,
    firstSeen: stamp(x.seen),
    ageSeconds: Math.floor((clock - x.seen) / 1000),
    dueAt: stamp(dueAt(x, c.minimumAgeMs)),
    due: clock >= dueAt(x, c.minimumAgeMs),
  }));
  return { candidates };
}

function verdictOf(v: ImageVerdict | undefined, settled: boolean, c: Config): ImageStatus["verdict"] {
  if (!settled)
    return {
      outcome: "skipped",
      reason: "not_settled",
      message: `${describeWorkload(c.state)} is not settled; the next tick skips`,
    };
  if (!v) return { outcome: "noop", reason: "unchanged", message: "" };
  return { outcome: v.outcome, reason: v.reason, message: v.message };
}

function classified(x: LiveContainer | undefined, recorded: string | null): Partial<TargetStatus> {
  if (!x) return {};
  const classification =
    x.state === "pinned" ? (x.digest === recorded ? "in_sync" : "pinned_elsewhere") : x.state;
  return { classification, ...(x.owner ? { lastChangedBy: x.owner } : {}) };
}

function targetStatus(
  w: ObservedWorkload | undefined,
  workload: string,
  container: string,
  recorded: string | null,
): TargetStatus {
  if (!w) return { workload, container, matchesRecorded: false, error: "not read" };
  if (!w.found) return { workload, container, matchesRecorded: false, error: w.message };
  const image = w.images[container];
  if (image === undefined)
    return { workload, container, matchesRecorded: false, error: noSuchContainer(container, w.images) };
  const pinnedDigest = /@(sha256:[0-9a-f]{64})$/.exec(image)?.[1];
  return {
    workload,
    container,
    image,
    pinnedDigest,
    matchesRecorded: pinnedDigest !== undefined && pinnedDigest === recorded,
    blocked: w.blocked,
  };
}
