// `image-refresh status [IMAGE...]`: what an operator paged at 3 a.m. needs on one screen. Reads,
// never writes: the store, the registry's digest now, each target's live image, the counters,
// and per image the verdict the next tick would reach (the tick's own observe and plan) with the
// one command that helps. Exits 1 when that verdict would exit 1 for a printed image.
import type { Config } from "../config.ts";
import { containerImages } from "../kube/objects.ts";
import { rolloutBlocked } from "../kube/settled.ts";
import type { Workload } from "../kube/workloads.ts";
import { exitCodeFor, type Outcome } from "../outcomes.ts";
import { writeStdout } from "../output.ts";
import type { Field } from "../state/values.ts";
import { rawOf } from "../state/values.ts";
import type { ImageVerdict } from "../tick/model.ts";
import { describeWorkload, workloadId } from "../tick/model.ts";
import { observe } from "../tick/observe.ts";
import { dueAt, parseCandidates, stamp } from "../tick/plan/candidates.ts";
import { type LiveContainer, liveImage } from "../tick/plan/live.ts";
import { plan } from "../tick/plan/plan.ts";
import { age } from "../tick/plan/soak.ts";
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
  /** The build whose rollout failed last (kept with the lockout). */
  failedDigest: string | null;
  skipStreak: string | null;
  maxSkipTicks: number;
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
  /** image-refresh's own ConfigMap, `<namespace>/<name>`, and whether it exists yet. */
  store: { name: string; exists: boolean };
  /** Legacy annotations still to carry into the store (the next write does). */
  legacy: Record<string, string>;
  images: ImageStatus[];
}

export async function statusCommand(
  rt: Runtime,
  json: boolean,
  named: readonly string[] = [],
): Promise<number> {
  checkImageKeys(rt.config, named);
  const attrs = { "image_refresh.installation": `${rt.store.namespace}/${rt.store.name}` };
  return rt.telemetry.command("image-refresh status", attrs, async (root) => {
    let report: StatusReport;
    try {
      report = await buildReport(rt, named);
    } catch (err) {
      rt.log.error(`cannot read the store: ${(err as Error).message}`);
      root.setError("store_unreadable");
      return 1;
    }
    root.setAttributes({
      "image_refresh.status.verdicts": report.images.map((i) => `${i.key}=${i.verdict.outcome}`).join(","),
    });
    writeStdout(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    // Like `kubectl rollout status`: usable as a check.
    return Math.max(0, ...report.images.map((i) => exitCodeFor(i.verdict.outcome as Outcome)));
  });
}

const raw = <T>(f: Field<T> | undefined): string | null => (f ? (rawOf(f) ?? null) : null);

export async function buildReport(rt: Runtime, named: readonly string[] = []): Promise<StatusReport> {
  const c = rt.config;
  // The tick's own reads (a dry-run context: nothing is written), so the verdict is the tick's.
  const obs = await observe(rt.tickContext(true));
  const observed = obs.observed;
  const clock = observed.clock ?? Date.now();
  const verdicts = new Map(plan(observed, c).images.map((v) => [v.key, v]));
  const wanted = c.images.filter((i) => named.length === 0 || named.includes(i.key));
  const images = wanted.map((img): ImageStatus => {
    const b = observed.book.images[img.key];
    const seen = observed.digests?.[img.key];
    const recorded = b?.digest.kind === "trusted" ? b.digest.value : null;
    const v = verdicts.get(img.key);
    const containers = liveImage(img, observed, c)?.containers ?? [];
    return {
      key: img.key,
      repository: img.repository,
      pinned: img.pinned,
      recordedDigest: recorded,
      registryDigest: seen?.ok ? seen.digest : null,
      registryError: seen && !seen.ok ? `${seen.failure}: ${seen.message}` : undefined,
      attemptCount: raw(b?.attempt),
      maxRefreshAttempts: c.maxRefreshAttempts,
      flapDetected: raw(b?.flap),
      failedDigest: raw(b?.failed),
      skipStreak: raw(b?.skip),
      maxSkipTicks: c.maxSkipTicks,
      unresolvedStreak: raw(b?.unresolved),
      maxUnresolvedTicks: c.maxUnresolvedTicks,
      rejectedDigest: raw(b?.rejected),
      ...candidatesOf(raw(b?.candidates) ?? undefined, clock, c),
      verdict: v
        ? { outcome: v.outcome, reason: v.reason, message: v.message }
        : { outcome: "noop", reason: "unchanged", message: "" },
      next: nextStep(img.key, v, c),
      targets: img.targets.map((t) => ({
        ...targetStatus(
          obs.objects.get(workloadId(t)),
          observed.workloads?.[workloadId(t)],
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
  const legacy = Object.fromEntries(
    Object.entries(obs.migration).filter((e): e is [string, string] => e[1] !== null),
  );
  return {
    store: {
      name: `${rt.store.namespace}/${rt.store.name}`,
      exists: obs.stored.resourceVersion !== undefined,
    },
    legacy,
    images,
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

/** The one command that helps, by what the next tick would do. */
function classified(x: LiveContainer | undefined, recorded: string | null): Partial<TargetStatus> {
  if (!x) return {};
  const classification =
    x.state === "pinned" ? (x.digest === recorded ? "in_sync" : "pinned_elsewhere") : x.state;
  return { classification, ...(x.owner ? { lastChangedBy: x.owner } : {}) };
}

function targetStatus(
  w: Workload | undefined,
  seen: { found: boolean; message?: string } | undefined,
  workload: string,
  container: string,
  recorded: string | null,
): TargetStatus {
  if (!w) {
    const error = seen && !seen.found ? (seen.message ?? "not found") : "not read";
    return { workload, container, matchesRecorded: false, error };
  }
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
  const n = /^[0-9]{1,9}$/.test(i.attemptCount ?? "") ? Number(i.attemptCount) : undefined;
  if (n !== undefined && n >= i.maxRefreshAttempts)
    return ` — LOCKED OUT${i.flapDetected !== null ? ` (flap detected at ${i.flapDetected})` : ""}${i.failedDigest ? `; failed build ${i.failedDigest}` : ""}`;
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
    `store: configmap ${r.store.name}${r.store.exists ? "" : " (not created yet: the first tick that writes creates it)"}`,
  ];
  const legacy = Object.entries(r.legacy);
  if (legacy.length)
    lines.push(
      `legacy annotations the next write carries into the store: ${legacy.map(([k, v]) => `${k}=${v}`).join(" ")}`,
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
    lines.push(`  skip streak: ${i.skipStreak ?? 0}/${i.maxSkipTicks}`);
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
