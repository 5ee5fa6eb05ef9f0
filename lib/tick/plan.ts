// The tick's decision: a pure function of what was observed and the configuration. No I/O, no
// clock, no environment; every branch is a row in plan.test.ts.
import {
  type AnnotationKeys,
  annotationKeys,
  type Counter,
  quoteForLog,
  readCounter,
} from "../annotations.ts";
import type { Config, ImageConfig } from "../config.ts";
import { type Action, type Decision, type Observed, type WorkloadRef, workloadId } from "./model.ts";

export function plan(o: Observed, c: Config): Decision {
  const keys = annotationKeys(c.annotationPrefix);
  const a = o.state.annotations;
  const attempt = readCounter(a[keys.attempt]);
  if (!o.state.settled) return planUnsettled(o, c, keys, attempt);
  const pre: Action[] = a[keys.skipStreak] !== undefined ? [{ type: "clear-streak" }] : [];
  const { changed, firstSeen } = compareDigests(o, c, keys);
  const lockedOut = attempt.kind === "trusted" && attempt.value >= c.maxRefreshAttempts;
  const after = { attemptCount: attemptValue(attempt), skipStreak: 0, lockedOut, frozen: false };
  const record: Action[] = Object.keys(firstSeen).length
    ? [{ type: "record-digests", digests: firstSeen }]
    : [];
  if (changed.length === 0) {
    if (record.length === 0)
      return {
        outcome: "noop",
        reason: "unchanged",
        message: "nothing to do",
        actions: pre,
        after,
        changed: [],
      };
    const names = Object.keys(firstSeen).join(", ");
    return {
      outcome: "recorded",
      reason: "first_observation",
      message: `first observation of ${names}`,
      actions: [...pre, ...record],
      after,
      changed: [],
    };
  }
  const changedKeys = changed.map((i) => i.key);
  if (attempt.kind === "untrusted") {
    const message = `${keys.attempt} is ${quoteForLog(attempt.raw)}, not a count; no rollout until a human checks the workloads and runs \`image-refresh rearm\` to clear it`;
    return {
      outcome: "held",
      reason: "attempt_untrusted",
      message,
      // Held or not, a first observation is recorded (SPEC step 6): a later push must compare
      // against it, or the image's next build would itself pass for a first observation.
      actions: [...pre, ...record],
      after,
      changed: changedKeys,
    };
  }
  const count = attempt.kind === "trusted" ? attempt.value : 0;
  if (count >= c.maxRefreshAttempts) return planLockout(o, c, keys, count, [...pre], record, changedKeys);
  const unavailable = missingTargets(o, changed);
  if (unavailable.length) {
    const message = `refresh of ${changedKeys.join(", ")} is due but cannot start safely: ${unavailable.join("; ")}`;
    return {
      outcome: "held",
      reason: "target_unavailable",
      message,
      actions: [...pre, ...record],
      after,
      changed: changedKeys,
    };
  }
  return planRefresh(c, { pre, count, changed, firstSeen });
}

function attemptValue(attempt: Counter): number | undefined {
  if (attempt.kind === "untrusted") return undefined;
  return attempt.kind === "trusted" ? attempt.value : 0;
}

function planUnsettled(o: Observed, c: Config, keys: AnnotationKeys, attempt: Counter): Decision {
  const streak = readCounter(o.state.annotations[keys.skipStreak]);
  const lockedOut = attempt.kind === "trusted" && attempt.value >= c.maxRefreshAttempts;
  const base = { attemptCount: attemptValue(attempt), lockedOut };
  if (streak.kind === "untrusted") {
    const message = `${keys.skipStreak} is ${quoteForLog(streak.raw)}, not a count, so this unsettled tick cannot be counted; remove the annotation to reset it`;
    return {
      outcome: "error",
      reason: "skip_streak_untrusted",
      message,
      actions: [],
      after: { ...base, frozen: false },
      changed: [],
    };
  }
  const previous = streak.kind === "trusted" ? streak.value : 0;
  const value = previous + 1;
  const actions: Action[] = [{ type: "write-streak", value }];
  const what = `${c.state.kind} ${c.state.namespace}/${c.state.name} is not settled (${o.state.settleMessage})`;
  if (value < c.maxSkipTicks) {
    const message = `${what}; skipping tick ${value}/${c.maxSkipTicks}`;
    return {
      outcome: "skipped",
      reason: "not_settled",
      message,
      actions,
      after: { ...base, skipStreak: value, frozen: false },
      changed: [],
    };
  }
  const message = `FROZEN: ${what} for ${value} ticks in a row (max ${c.maxSkipTicks}); no refresh of ${allTargets(c).join(", ")} until it settles`;
  if (previous < c.maxSkipTicks)
    actions.push({ type: "event", eventType: "Warning", reason: "RefreshFrozen", note: message });
  return {
    outcome: "frozen",
    reason: "skip_ceiling",
    message,
    actions,
    after: { ...base, skipStreak: value, frozen: true },
    changed: [],
  };
}

function allTargets(c: Config): string[] {
  const seen = new Set<string>();
  for (const img of c.images) for (const t of img.targets) seen.add(`${t.kind} ${t.namespace}/${t.name}`);
  return [...seen];
}

interface Changed extends ImageConfig {
  digest: string;
}

function compareDigests(o: Observed, c: Config, keys: AnnotationKeys) {
  const changed: Changed[] = [];
  const firstSeen: Record<string, string> = {};
  for (const img of c.images) {
    const seen = img.pinned ? undefined : o.digests?.[img.key];
    if (!seen?.ok) continue;
    const recorded = o.state.annotations[keys.digest(img.key)];
    if (recorded === undefined) firstSeen[img.key] = seen.digest;
    else if (recorded !== seen.digest) changed.push({ ...img, digest: seen.digest });
  }
  return { changed, firstSeen };
}

function planLockout(
  o: Observed,
  c: Config,
  keys: AnnotationKeys,
  count: number,
  actions: Action[],
  record: Action[],
  changed: string[],
): Decision {
  const message = `refresh of ${changed.join(", ")} is held: ${count} failed rollouts in a row (max ${c.maxRefreshAttempts}); check the workloads, then run \`image-refresh rearm\` to re-arm`;
  if (o.state.annotations[keys.flap] === undefined) {
    actions.push({ type: "mark-flap", count });
    actions.push({ type: "event", eventType: "Warning", reason: "RefreshLockedOut", note: message });
  }
  actions.push(...record);
  const after = { attemptCount: count, skipStreak: 0, lockedOut: true, frozen: false };
  return { outcome: "locked_out", reason: "flap_lockout", message, actions, after, changed };
}

function missingTargets(o: Observed, changed: Changed[]): string[] {
  const problems: string[] = [];
  for (const img of changed) {
    for (const t of img.targets) {
      const w = o.workloads?.[workloadId(t)];
      if (!w) problems.push(`${t.kind} ${t.namespace}/${t.name} was not read`);
      else if (!w.found) problems.push(`${t.kind} ${t.namespace}/${t.name}: ${w.message}`);
      else if (w.images[t.container] === undefined)
        problems.push(`${t.kind} ${t.namespace}/${t.name} has no container named "${t.container}"`);
    }
  }
  return [...new Set(problems)];
}

function planRefresh(
  c: Config,
  p: { pre: Action[]; count: number; changed: Changed[]; firstSeen: Record<string, string> },
): Decision {
  const firstSeen = Object.keys(p.firstSeen).length ? { firstSeen: p.firstSeen } : {};
  const actions: Action[] = [...p.pre, { type: "persist-attempt", count: p.count + 1, ...firstSeen }];
  for (const roll of rolloutsInConfigOrder(c, p.changed)) actions.push({ type: "rollout", ...roll });
  actions.push({ type: "reset" });
  const digests: Record<string, string> = { ...p.firstSeen };
  for (const img of p.changed) digests[img.key] = img.digest;
  actions.push({ type: "record-digests", digests });
  const keys = p.changed.map((i) => i.key);
  const note = p.changed.map((i) => `${i.repository} → ${i.digest}`).join(", ");
  actions.push({ type: "event", eventType: "Normal", reason: "Refreshed", note: `refreshed ${note}` });
  const message = `digest changed for ${keys.join(", ")}; refresh attempt ${p.count + 1}/${c.maxRefreshAttempts}`;
  const after = { attemptCount: 0, skipStreak: 0, lockedOut: false, frozen: false };
  return { outcome: "refreshed", reason: "digest_changed", message, actions, after, changed: keys };
}

/** One rollout per workload, in the order workloads first appear in the config, carrying all its containers. */
function rolloutsInConfigOrder(c: Config, changed: Changed[]) {
  const byKey = new Map(changed.map((i) => [i.key, i]));
  const rolls = new Map<
    string,
    { workload: WorkloadRef; containers: Array<{ name: string; image: string }>; images: string[] }
  >();
  for (const img of c.images) {
    const ch = byKey.get(img.key);
    for (const t of img.targets) {
      const id = workloadId(t);
      if (!rolls.has(id))
        rolls.set(id, {
          workload: { kind: t.kind, namespace: t.namespace, name: t.name },
          containers: [],
          images: [],
        });
      if (!ch) continue;
      const roll = rolls.get(id) as { containers: Array<{ name: string; image: string }>; images: string[] };
      roll.containers.push({ name: t.container, image: `${c.registry.host}/${ch.repository}@${ch.digest}` });
      if (!roll.images.includes(ch.key)) roll.images.push(ch.key);
    }
  }
  return [...rolls.values()].filter((r) => r.containers.length > 0);
}

/** Whether observe must read the target workloads: only when a refresh could actually start. */
export function needsTargets(o: Observed, c: Config): boolean {
  const keys = annotationKeys(c.annotationPrefix);
  const attempt = readCounter(o.state.annotations[keys.attempt]);
  if (attempt.kind === "untrusted" || (attempt.kind === "trusted" && attempt.value >= c.maxRefreshAttempts))
    return false;
  return compareDigests(o, c, keys).changed.length > 0;
}

/** The workloads whose images changed, for observe to read. */
export function targetsToRead(o: Observed, c: Config): WorkloadRef[] {
  const keys = annotationKeys(c.annotationPrefix);
  const refs = new Map<string, WorkloadRef>();
  for (const img of compareDigests(o, c, keys).changed)
    for (const t of img.targets)
      refs.set(workloadId(t), { kind: t.kind, namespace: t.namespace, name: t.name });
  return [...refs.values()];
}
