// What a workload's pods say against the build they run, judged from one observation (pure).
// The rollout wait fails fast on a crash or a failed pull of a new pod; the verification window
// also fails a pod that was Ready and no longer is; a regression is the same evidence on a
// verified build's pods, counted from its verification. Pods being deleted, pods still starting
// and pods unready only because their node is are not evidence: none says the build is bad.
import type { ContainerState, Pod } from "./pods.ts";

export type EvidenceKind = "restarted" | "crash_loop" | "image_pull" | "unready";

export interface Evidence {
  pod: string;
  container?: string;
  kind: EvidenceKind;
  /** lastState.terminated.finishedAt of the restart shown (restarted, crash_loop), when the pod says. */
  finishedAt?: string;
  /** What the pod showed, e.g. "container api waits in CrashLoopBackOff after 2 restarts (last exit: Error, code 1)". */
  what: string;
}

export interface EvidenceRules {
  /**
   * Restart counts of each pod's containers (by pod uid) when watching began; a pod not in it
   * started at 0 (a new pod). Counts at or below these are not restarts.
   */
  baseline?: ReadonlyMap<string, Readonly<Record<string, number>>>;
  /**
   * A running pod that is not Ready: "none" is no evidence (the rollout wait, whose pods are
   * still starting), "known" only for pods in `baseline` (the verification window: a replacement
   * pod may still be starting), "all" for every pod (a regression).
   */
  unready: "none" | "known" | "all";
  /** RFC 3339: a restart that began before this is not evidence (a regression counts from verification). */
  restartsSince?: string;
  /**
   * RFC 3339: a restart that finished at or before this was counted already (a regression of the
   * same build on an earlier tick); one whose finish the pod does not say is not evidence either.
   */
  restartsAfter?: string;
}

const PULL = new Set(["ErrImagePull", "ImagePullBackOff"]);

function lastExit(c: ContainerState): string {
  if (!c.lastTerminated) return "";
  const code = c.lastExitCode !== undefined ? `, code ${c.lastExitCode}` : "";
  return ` (last exit: ${c.lastTerminated}${code})`;
}

function restartedSince(c: ContainerState, rules: EvidenceRules): boolean {
  const at = c.lastFinishedAt ? Date.parse(c.lastFinishedAt) : Number.NaN;
  if (rules.restartsAfter && (Number.isNaN(at) || at <= Date.parse(rules.restartsAfter))) return false;
  return !rules.restartsSince || Number.isNaN(at) || at >= Date.parse(rules.restartsSince);
}

function containerEvidence(p: Pod, c: ContainerState, rules: EvidenceRules): Evidence | undefined {
  const at = {
    pod: p.name,
    container: c.name,
    ...(c.lastFinishedAt ? { finishedAt: c.lastFinishedAt } : {}),
  };
  const restarts = c.restartCount === 1 ? "1 restart" : `${c.restartCount} restarts`;
  if (c.waiting === "CrashLoopBackOff" && restartedSince(c, rules))
    return {
      ...at,
      kind: "crash_loop",
      what: `container ${c.name} waits in CrashLoopBackOff after ${restarts}${lastExit(c)}`,
    };
  if (c.waiting && PULL.has(c.waiting))
    return {
      pod: p.name,
      container: c.name,
      kind: "image_pull",
      what: `container ${c.name} cannot pull its image (${c.waiting})`,
    };
  const before = rules.baseline?.get(p.uid)?.[c.name] ?? 0;
  if (c.restartCount > before && restartedSince(c, rules))
    return {
      ...at,
      kind: "restarted",
      what: `container ${c.name} restarted (restart count ${before} -> ${c.restartCount})${lastExit(c)}`,
    };
  return undefined;
}

/**
 * Unready through no fault of the build: the node controller marks a pod of a NotReady node
 * unready without the kubelet (so its containers still say ready), or says NodeNotReady.
 */
function nodeUnready(p: Pod): boolean {
  return p.readyReason === "NodeNotReady" || (p.containers.length > 0 && p.containers.every((c) => c.ready));
}

function unreadyEvidence(p: Pod, rules: EvidenceRules): Evidence | undefined {
  if (rules.unready === "none" || p.phase !== "Running" || p.ready !== false || nodeUnready(p))
    return undefined;
  if (rules.unready === "known" && !rules.baseline?.has(p.uid)) return undefined;
  const why = p.readyReason ? ` (${p.readyReason})` : "";
  return { pod: p.name, kind: "unready", what: `is running but not Ready${why}` };
}

/** The first evidence against the build among `pods` (all of them running it), or undefined. */
export function podEvidence(pods: readonly Pod[], rules: EvidenceRules): Evidence | undefined {
  for (const p of pods) {
    if (p.deleting) continue;
    for (const c of p.containers) {
      const e = containerEvidence(p, c, rules);
      if (e) return e;
    }
  }
  for (const p of pods) {
    const e = p.deleting ? undefined : unreadyEvidence(p, rules);
    if (e) return e;
  }
  return undefined;
}

/** Each pod's containers' restart counts now: the baseline a later observation is judged against. */
export function restartBaseline(pods: readonly Pod[]): Map<string, Record<string, number>> {
  return new Map(
    pods.map((p) => [p.uid, Object.fromEntries(p.containers.map((c) => [c.name, c.restartCount]))]),
  );
}

/** The pods that run every one of `images` (container name to image): the build's own. */
export function podsRunning(pods: readonly Pod[], images: Readonly<Record<string, string>>): Pod[] {
  const want = Object.entries(images);
  return pods.filter((p) => want.every(([name, image]) => p.images[name] === image));
}

/** "pod apps/api-7d9-x2b: container api waits in CrashLoopBackOff ..." */
export function describeEvidence(namespace: string, e: Evidence): string {
  return `pod ${namespace}/${e.pod}: ${e.what}`;
}
