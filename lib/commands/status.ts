// `image-refresh status`: what an operator paged at 3 a.m. needs on one screen. Read-only: the
// state object, each target's live image against the recorded digest, counters and a verdict.
import { annotationKeys, readCounter } from "../annotations.ts";
import type { Config } from "../config.ts";
import { containerImages, nameAttribute } from "../kube/objects.ts";
import { rolloutBlocked, rolloutStatus } from "../kube/settled.ts";
import type { KubeClient, Workload } from "../kube/workloads.ts";
import { writeStdout } from "../output.ts";
import { stateRef } from "../tick/observe.ts";
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
}

export interface StatusReport {
  state: { workload: string; settled: boolean; message: string };
  verdict: "healthy" | "refreshing" | "locked out" | "frozen" | "attention";
  attemptCount: string | null;
  maxRefreshAttempts: number;
  flapDetected: string | null;
  skipStreak: string | null;
  maxSkipTicks: number;
  images: Array<{
    key: string;
    repository: string;
    pinned: boolean;
    recordedDigest: string | null;
    targets: TargetStatus[];
  }>;
}

export async function statusCommand(rt: Runtime, json: boolean): Promise<number> {
  const s = rt.config.state;
  const attrs = { "k8s.namespace.name": s.namespace, [nameAttribute(s.kind)]: s.name };
  return rt.telemetry.command("image-refresh status", attrs, async (root) => {
    let report: StatusReport;
    try {
      report = await buildReport(rt.config, rt.kube);
    } catch (err) {
      rt.log.error(`cannot read the state object: ${(err as Error).message}`);
      root.setError("state_unreadable");
      return 1;
    }
    root.setAttributes({ "image_refresh.status.verdict": report.verdict });
    writeStdout(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return 0;
  });
}

export async function buildReport(c: Config, kube: KubeClient): Promise<StatusReport> {
  const keys = annotationKeys(c.annotationPrefix);
  const state = await kube.get(stateRef(c));
  const a = state.metadata.annotations;
  const rollout = rolloutStatus(state);
  const live = new Map<string, Workload | Error>();
  const images = [];
  for (const img of c.images) {
    const recorded = a[keys.digest(img.key)] ?? null;
    const targets: TargetStatus[] = [];
    for (const t of img.targets) {
      const id = `${t.kind}/${t.namespace}/${t.name}`;
      if (!live.has(id)) live.set(id, await kube.get(t).catch((e: Error) => e));
      targets.push(
        targetStatus(
          live.get(id) as Workload | Error,
          `${t.kind} ${t.namespace}/${t.name}`,
          t.container,
          recorded,
        ),
      );
    }
    images.push({
      key: img.key,
      repository: img.repository,
      pinned: img.pinned,
      recordedDigest: recorded,
      targets,
    });
  }
  const report: Omit<StatusReport, "verdict"> = {
    state: {
      workload: `${c.state.kind} ${c.state.namespace}/${c.state.name}`,
      settled: rollout.done,
      message: rollout.error ?? rollout.message,
    },
    attemptCount: a[keys.attempt] ?? null,
    maxRefreshAttempts: c.maxRefreshAttempts,
    flapDetected: a[keys.flap] ?? null,
    skipStreak: a[keys.skipStreak] ?? null,
    maxSkipTicks: c.maxSkipTicks,
    images,
  };
  return { ...report, verdict: verdict(report) };
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

function verdict(r: Omit<StatusReport, "verdict">): StatusReport["verdict"] {
  const attempt = readCounter(r.attemptCount ?? undefined);
  const streak = readCounter(r.skipStreak ?? undefined);
  if (attempt.kind === "untrusted" || streak.kind === "untrusted") return "attention";
  if (streak.kind === "trusted" && streak.value >= r.maxSkipTicks) return "frozen";
  if (attempt.kind === "trusted" && attempt.value >= r.maxRefreshAttempts) return "locked out";
  if (attempt.kind === "trusted" && attempt.value > 0) return "refreshing";
  return "healthy";
}

/**
 * The lockout is decided by the count alone (SPEC): a flap marker left behind after
 * maxRefreshAttempts was raised above the count is stale, and the next tick clears it.
 */
function lockoutNote(r: StatusReport): string {
  if (r.verdict === "locked out")
    return ` — LOCKED OUT${r.flapDetected !== null ? ` (flap detected at ${r.flapDetected})` : ""}; run image-refresh rearm after checking the workloads`;
  if (r.flapDetected !== null)
    return ` — the flap marker (${r.flapDetected}) is stale: the count is below the maximum, so the next refresh goes ahead`;
  return "";
}

export function formatReport(r: StatusReport): string {
  const lines = [
    `verdict: ${r.verdict}`,
    `state object: ${r.state.workload} (${r.state.settled ? "settled" : "not settled"}: ${r.state.message})`,
    `refresh attempts: ${r.attemptCount ?? 0}/${r.maxRefreshAttempts}${lockoutNote(r)}`,
    `skip streak: ${r.skipStreak ?? 0}/${r.maxSkipTicks}`,
  ];
  for (const img of r.images) {
    lines.push(
      `image ${img.key} (${img.repository})${img.pinned ? " [pinned: never refreshed]" : ""}: recorded ${img.recordedDigest ?? "(none yet)"}`,
    );
    for (const t of img.targets) {
      const state = t.error
        ? `ERROR ${t.error}`
        : t.matchesRecorded
          ? "matches recorded digest"
          : t.pinnedDigest
            ? "pinned to another digest"
            : "not pinned to a digest";
      const blocked = t.blocked ? `; a refresh is held here: ${t.blocked}` : "";
      lines.push(`  ${t.workload} container ${t.container}: ${t.image ?? "-"} (${state}${blocked})`);
    }
  }
  return `${lines.join("\n")}\n`;
}
