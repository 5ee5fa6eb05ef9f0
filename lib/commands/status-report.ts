// What `status` reports: the tick's own observation and plan (observe.ts, plan/plan.ts), so an
// image's verdict is the one the next tick reaches whichever images are named; the names narrow
// only what is printed. The targets of pinned images, which the tick does not read, are read for
// display only, after the plan.
import type { Config } from "../config.ts";
import type { ImageBook } from "../state/book.ts";
import type { Field } from "../state/values.ts";
import { countOf, rawOf, trusted } from "../state/values.ts";
import {
  currentSignatures,
  dueAt,
  type LiveContainer,
  liveImage,
  noSuchContainer,
  type Observed,
  type ObservedWorkload,
  observe,
  observeWorkload,
  parseCandidates,
  planWithSignatures,
  regressionSuspects,
  type SignatureStatus,
  stamp,
} from "../tick/index.ts";
import { describeWorkload, distinctTargets, workloadId } from "../workload.ts";
import { nextStep } from "./next-step.ts";
import type { Runtime } from "./runtime.ts";
import { failedAndCounting, forecast, pastTense } from "./status-tense.ts";

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
  /** The build whose rollout failed last (kept with the lockout). */
  failedDigest: string | null;
  skipStreak: string | null;
  maxSkipTicks: number;
  unresolvedStreak: string | null;
  maxUnresolvedTicks: number;
  rejectedDigest: string | null;
  /** The verdict the next tick would reach, with its reason and sentence. */
  verdict: { outcome: string; reason: string; message: string };
  /** The next tick's verdict in the future tense ("the next tick rolls out sha256:…"). */
  forecast: string;
  /**
   * The last refresh attempt, in the past tense: its build, when (the tick's clock), how it ended,
   * and whether its build was seen to fail while its count still stands (then `status` exits 1).
   */
  lastAttempt?: { digest: string; ending: string; at: string; told: string; failed: boolean };
  /** The one command (or step) that helps. */
  next: string;
  targets: TargetStatus[];
  /** minimumAge: the builds waiting out their age, newest first, by the API server's clock. */
  candidates?: CandidateStatus[];
  /** The image's signature policy, and whether the registry's current build verifies under it. */
  signature?: SignatureStatus;
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
  /** image-refresh's own ConfigMap, `<namespace>/<name>`, and whether it exists yet. */
  store: { name: string; exists: boolean };
  /** Legacy annotations the next write carries into the store. */
  legacy: Record<string, string>;
  images: ImageStatus[];
  /** Set when the registry was asked anonymously although the config names a pull secret. */
  anonymousRegistry?: string;
}

const raw = <T>(f: Field<T> | undefined): string | null => (f ? (rawOf(f) ?? null) : null);

export async function buildReport(rt: Runtime, named: readonly string[] = []): Promise<StatusReport> {
  const c = rt.config;
  // The tick's own reads, with a dry-run context: nothing is written.
  const ctx = rt.tickContext(true);
  const obs = await observe(ctx, (o) => regressionSuspects(c, o));
  const signatures = await currentSignatures(ctx, obs.observed);
  // A build due other than the registry's (a soaked candidate) is looked up as the tick would.
  const planned = await planWithSignatures(ctx, obs.observed);
  const verdicts = new Map(planned.images.map((v) => [v.key, v]));
  const wanted = c.images.filter((i) => named.length === 0 || named.includes(i.key));
  const shown = await forDisplay(rt, obs.observed, wanted);
  // Ages are told by the API server's clock, as the tick judges them.
  const clock = obs.observed.clock ?? Math.floor(Date.now() / 1000) * 1000;
  const images = wanted.map((img): ImageStatus => {
    const b = obs.observed.book.images[img.key];
    const r = shown.digests?.[img.key];
    const recorded = b?.digest.kind === "trusted" ? b.digest.value : null;
    const v = verdicts.get(img.key);
    const containers = liveImage(img, shown, c)?.containers ?? [];
    return {
      key: img.key,
      repository: img.repository,
      pinned: img.pinned,
      recordedDigest: recorded,
      registryDigest: r?.ok ? r.digest : null,
      registryError: r && !r.ok ? `${r.failure}: ${r.message}` : undefined,
      attemptCount: raw(b?.attempt),
      maxRefreshAttempts: c.maxRefreshAttempts,
      flapDetected: raw(b?.flap),
      failedDigest: raw(b?.failed),
      skipStreak: raw(b?.skip),
      maxSkipTicks: c.maxSkipTicks,
      unresolvedStreak: raw(b?.unresolved),
      maxUnresolvedTicks: c.maxUnresolvedTicks,
      rejectedDigest: raw(b?.rejected),
      ...(img.pinned ? {} : { signature: signatures[img.key] }),
      ...candidatesOf(raw(b?.candidates) ?? undefined, clock, c),
      verdict: v
        ? { outcome: v.outcome, reason: v.reason, message: v.message }
        : { outcome: "noop", reason: "unchanged", message: "" },
      forecast: v ? forecast(v) : forecast({ outcome: "noop", reason: "unchanged" }),
      ...lastAttemptOf(b),
      next: nextStep(img.key, v, c),
      targets: img.targets.map((t) => ({
        ...targetStatus(shown.workloads?.[workloadId(t)], describeWorkload(t), t.container, recorded),
        ...classified(
          containers.find((x) => x.target === t),
          recorded,
        ),
      })),
    };
  });
  const legacy = Object.fromEntries(
    Object.entries(obs.read.migration).filter((e): e is [string, string] => e[1] !== null),
  );
  return {
    store: {
      name: `${rt.store.namespace}/${rt.store.name}`,
      exists: obs.read.stored.resourceVersion !== undefined,
    },
    legacy,
    images,
  };
}

/** The observation widened, for display only, by the printed images' targets the tick did not read (a pinned image's). */
async function forDisplay(rt: Runtime, o: Observed, wanted: Config["images"]): Promise<Observed> {
  const workloads: Record<string, ObservedWorkload> = { ...o.workloads };
  const unread = distinctTargets({ images: wanted }).filter((t) => workloads[workloadId(t)] === undefined);
  const reads = await Promise.all(
    unread.map(
      (t): Promise<ObservedWorkload> =>
        rt.kube.get(t).then(observeWorkload, (e: Error) => ({ found: false, message: e.message })),
    ),
  );
  unread.forEach((t, i) => {
    workloads[workloadId(t)] = reads[i] as ObservedWorkload;
  });
  return { ...o, workloads };
}

function lastAttemptOf(b: ImageBook | undefined): Pick<ImageStatus, "lastAttempt"> {
  const a = b && trusted(b.last);
  if (!a) return {};
  const failed = failedAndCounting(a, countOf(b.attempt));
  return { lastAttempt: { digest: a.digest, ending: a.ending, at: stamp(a.at), told: pastTense(a), failed } };
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
