// `image-refresh status [IMAGE...]`: what an operator paged at 3 a.m. needs on one screen. Reads,
// never writes: the state object, the registry's digest now, each target's live image, the
// counters, and per image the verdict the next tick would reach (the tick's own plan, fed what
// status read) with the one command that helps.
import { annotationKeys, imageCounters, readCounter } from "../annotations.ts";
import type { Config } from "../config.ts";
import { containerImages } from "../kube/objects.ts";
import { rolloutBlocked, rolloutStatus } from "../kube/settled.ts";
import type { Workload } from "../kube/workloads.ts";
import { writeStdout } from "../output.ts";
import type { DigestResult } from "../registry/client.ts";
import type { ImageVerdict, Observed, ObservedWorkload } from "../tick/model.ts";
import { observeState, observeWorkload, registryNotBefore, tickClock } from "../tick/observe.ts";
import { dueAt, parseCandidates, stamp } from "../tick/plan/candidates.ts";
import { type LiveContainer, liveImage } from "../tick/plan/live.ts";
import { plan } from "../tick/plan/plan.ts";
import { age } from "../tick/plan/soak.ts";
import { describeWorkload, stateRef, workloadAttributes, workloadId } from "../workload.ts";
import { nextStep } from "./next-step.ts";
import { checkImageKeys } from "./rearm.ts";
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
}

export async function statusCommand(
  rt: Runtime,
  json: boolean,
  named: readonly string[] = [],
): Promise<number> {
  checkImageKeys(rt.config, named);
  const s = rt.config.state;
  const attrs = workloadAttributes(s);
  return rt.telemetry.command("image-refresh status", attrs, async (root) => {
    let report: StatusReport;
    try {
      report = await buildReport(rt, named);
    } catch (err) {
      rt.log.error(`cannot read the state object: ${(err as Error).message}`);
      root.setError("state_unreadable");
      return 1;
    }
    root.setAttributes({
      "image_refresh.status.verdicts": report.images.map((i) => `${i.key}=${i.verdict.outcome}`).join(","),
    });
    writeStdout(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return 0;
  });
}

export async function buildReport(rt: Runtime, named: readonly string[] = []): Promise<StatusReport> {
  const c = rt.config;
  const { workload: state, date } = await rt.kube.getDated(stateRef(c));
  // Ages are told by the API server's clock, as the tick judges them (SPEC step 1).
  const clock = tickClock(date, { now: () => Date.now(), log: rt.log }, c.minimumAgeMs > 0);
  const a = state.metadata.annotations;
  const rollout = rolloutStatus(state);
  const wanted = c.images.filter((i) => named.length === 0 || named.includes(i.key));
  const live = await readTargets(rt, wanted, state);
  const repos = [...new Set(wanted.filter((i) => !i.pinned).map((i) => i.repository))];
  // Status respects the registry's stored Retry-After like a tick: the quota is the workloads'.
  const notBefore = registryNotBefore(a, c.annotationPrefix, Date.now());
  const digests: Map<string, DigestResult> = repos.length
    ? await rt.tickContext(true).resolve(repos, { notBefore })
    : new Map();
  const observed = { ...observedFor(c, state, rollout.done, digests, live), clock };
  const verdicts = new Map(plan(observed, c).images.map((v) => [v.key, v]));
  const keys = annotationKeys(c.annotationPrefix);
  const images = wanted.map((img): ImageStatus => {
    const counters = imageCounters(a, c.annotationPrefix, img.key);
    const r = digests.get(img.repository);
    const recorded = a[keys.digest(img.key)] ?? null;
    const v = verdicts.get(img.key);
    const containers = liveImage(img, observed, c)?.containers ?? [];
    return {
      key: img.key,
      repository: img.repository,
      pinned: img.pinned,
      recordedDigest: recorded,
      registryDigest: r?.ok ? r.digest : null,
      registryError: r && !r.ok ? `${r.reason}: ${r.message}` : undefined,
      attemptCount: counters.attemptFrom ? (a[counters.attemptFrom] ?? null) : null,
      maxRefreshAttempts: c.maxRefreshAttempts,
      flapDetected: counters.flap ?? null,
      unresolvedStreak: a[keys.image(img.key).unresolved] ?? null,
      maxUnresolvedTicks: c.maxUnresolvedTicks,
      rejectedDigest: counters.rejected ?? null,
      ...candidatesOf(a[keys.image(img.key).candidates], clock, c),
      verdict: verdictOf(v, rollout.done, c),
      next: nextStep(img.key, v, rollout.done, c),
      targets: img.targets.map((t) => ({
        ...targetStatus(
          live.get(workloadId(t)) as Workload | Error,
          describeWorkload(t),
          t.container,
          recorded,
        ),
        ...classified(
          containers.find((x) => x.target === t),
          recorded,
        ),
      })),
    };
  });
  return {
    state: {
      workload: describeWorkload(c.state),
      settled: rollout.done,
      message: rollout.error ?? rollout.message,
    },
    skipStreak: a[keys.skipStreak] ?? null,
    maxSkipTicks: c.maxSkipTicks,
    legacy: Object.fromEntries(
      Object.entries(keys.legacy).flatMap(([, k]) => (a[k] !== undefined ? [[k, a[k]]] : [])),
    ),
    images,
  };
}

/** Each distinct target workload once, concurrently; the state object is not read again. */
async function readTargets(rt: Runtime, images: Config["images"], state: Workload) {
  const refs = new Map<string, Config["images"][number]["targets"][number]>();
  for (const img of images) for (const t of img.targets) refs.set(workloadId(t), t);
  const stateId = workloadId(stateRef(rt.config));
  const reads = await Promise.all(
    [...refs].map(
      async ([id, t]) => [id, id === stateId ? state : await rt.kube.get(t).catch((e: Error) => e)] as const,
    ),
  );
  return new Map<string, Workload | Error>(reads);
}

function observedFor(
  c: Config,
  state: Workload,
  settled: boolean,
  digests: Map<string, DigestResult>,
  live: Map<string, Workload | Error>,
): Observed {
  const workloads: Record<string, ObservedWorkload> = {};
  for (const [id, w] of live) {
    if (w instanceof Error) workloads[id] = { found: false, message: w.message };
    else workloads[id] = observeWorkload(w);
  }
  const out: Observed["digests"] = {};
  for (const img of c.images) {
    const r = digests.get(img.repository);
    if (r)
      out[img.key] = r.ok
        ? { ok: true, digest: r.digest }
        : { ok: false, failure: r.reason, message: r.message };
  }
  return {
    state: observeState(state, c, settled, ""),
    digests: out,
    workloads,
  };
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

/** The one command that helps, by what the next tick would do. */
function classified(x: LiveContainer | undefined, recorded: string | null): Partial<TargetStatus> {
  if (!x) return {};
  const classification =
    x.state === "pinned" ? (x.digest === recorded ? "in_sync" : "pinned_elsewhere") : x.state;
  return { classification, ...(x.owner ? { lastChangedBy: x.owner } : {}) };
}

function targetStatus(
  w: Workload | Error,
  workload: string,
  container: string,
  recorded: string | null,
): TargetStatus {
  if (w instanceof Error) return { workload, container, matchesRecorded: false, error: w.message };
  const found = containerImages(w).get(container);
  if (!found)
    return { workload, container, matchesRecorded: false, error: `no container named "${container}"` };
  const pinnedDigest = /@(sha256:[0-9a-f]{64})$/.exec(found.image)?.[1];
  return {
    workload,
    container,
    image: found.image,
    pinnedDigest,
    matchesRecorded: pinnedDigest !== undefined && pinnedDigest === recorded,
    blocked: rolloutBlocked(w),
  };
}

/**
 * The lockout is decided by the count alone (SPEC): a flap marker left behind after
 * maxRefreshAttempts was raised above the count is stale, and the next refresh goes ahead.
 */
function lockoutNote(i: ImageStatus): string {
  const n = readCounter(i.attemptCount ?? undefined);
  if (n.kind === "trusted" && n.value >= i.maxRefreshAttempts)
    return ` — LOCKED OUT${i.flapDetected !== null ? ` (flap detected at ${i.flapDetected})` : ""}`;
  if (i.flapDetected !== null)
    return ` — the flap marker (${i.flapDetected}) is stale: the count is below the maximum, so the next refresh goes ahead`;
  return "";
}

function candidateLines(list: CandidateStatus[]): string[] {
  if (list.length === 0) return ["  candidates (minimumAge): none waiting"];
  return [
    "  candidates (minimumAge), newest first:",
    ...list.map((x) => {
      const left = Date.parse(x.dueAt) - Date.parse(x.firstSeen) - x.ageSeconds * 1000;
      const when = x.due
        ? "aged: the newest aged candidate rolls out on the next tick"
        : `due ${x.dueAt} (in ${age(left)})`;
      return `    ${x.digest} first seen ${x.firstSeen} (${age(x.ageSeconds * 1000)} ago), ${when}`;
    }),
  ];
}

const CLASSIFIED: Record<NonNullable<TargetStatus["classification"]>, string> = {
  in_sync: "in sync: pinned to the recorded digest",
  pinned_elsewhere: "pinned to another digest",
  floating: "the floating tag, not pinned",
  other_tag: "another tag of the repository",
  other_repo: "ANOTHER REPOSITORY than the config names",
};

export function formatReport(r: StatusReport): string {
  const lines = [
    `state object: ${r.state.workload} (${r.state.settled ? "settled" : "not settled"}: ${r.state.message})`,
    `skip streak: ${r.skipStreak ?? 0}/${r.maxSkipTicks}`,
  ];
  const legacy = Object.entries(r.legacy);
  if (legacy.length)
    lines.push(
      `legacy keys (count for every image until the next counter write): ${legacy.map(([k, v]) => `${k}=${v}`).join(" ")}`,
    );
  for (const i of r.images) {
    lines.push("");
    lines.push(
      `image ${i.key} (${i.repository})${i.pinned ? " [pinned: never refreshed]" : ""}: ${i.verdict.outcome.toUpperCase()} (${i.verdict.reason})`,
    );
    if (i.verdict.message) lines.push(`  ${i.verdict.message}`);
    lines.push(`  recorded: ${i.recordedDigest ?? "(none yet)"}`);
    if (!i.pinned)
      lines.push(`  registry: ${i.registryDigest ?? `(cannot resolve: ${i.registryError ?? "not asked"})`}`);
    lines.push(`  refresh attempts: ${i.attemptCount ?? 0}/${i.maxRefreshAttempts}${lockoutNote(i)}`);
    lines.push(`  unresolved streak: ${i.unresolvedStreak ?? 0}/${i.maxUnresolvedTicks}`);
    if (i.rejectedDigest) lines.push(`  rejected build: ${i.rejectedDigest}`);
    if (i.candidates) lines.push(...candidateLines(i.candidates));
    for (const t of i.targets) {
      const state = t.error ? `ERROR ${t.error}` : CLASSIFIED[t.classification ?? "other_repo"];
      const by = t.lastChangedBy
        ? `; image last changed by ${t.lastChangedBy.manager}${t.lastChangedBy.time ? ` at ${t.lastChangedBy.time}` : ""}`
        : t.error
          ? ""
          : "; no field manager on record";
      const blocked = t.blocked ? `; a refresh is held here: ${t.blocked}` : "";
      lines.push(`  ${t.workload} container ${t.container}: ${t.image ?? "-"} (${state}${by}${blocked})`);
    }
    lines.push(`  next: ${i.next}`);
  }
  return `${lines.join("\n")}\n`;
}
