// What SPEC says each image's counters are and which images a tick may roll out, computed
// from the annotations and the observation alone, without lib/annotations.ts or lib/tick/:
// the properties compare plan() and the real tick against this, so a bug shared by the two
// halves of lib cannot hide behind itself.
import type { Config } from "../../lib/config.ts";
import type { Observed } from "../../lib/tick/model.ts";

export type Count = { kind: "absent" } | { kind: "trusted"; value: number } | { kind: "untrusted" };

/** SPEC "Trusted integers": plain decimal digits, at most nine. */
export function countOf(v: string | undefined): Count {
  if (v === undefined) return { kind: "absent" };
  return /^[0-9]{1,9}$/.test(v) ? { kind: "trusted", value: Number(v) } : { kind: "untrusted" };
}
export const numberOf = (c: Count) => (c.kind === "trusted" ? c.value : c.kind === "absent" ? 0 : Number.NaN);

export const LEGACY = ["refresh-attempt", "refresh-flap-detected", "refresh-attempt-traceparent"] as const;

/** Legacy single-counter key names present, under any prefix (the configured one wins a tie). */
export function legacyNames(a: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(a)) {
    const local = name.slice(name.lastIndexOf("/") + 1);
    if (!name.includes("/") || !(LEGACY as readonly string[]).includes(local)) continue;
    if (out[local] === undefined || name === `${prefix}/${local}`) out[local] = name;
  }
  return out;
}

/** An image's own key if present, else the legacy one (SPEC: legacy keys count for every image). */
function ownOrLegacy(a: Record<string, string>, prefix: string, own: string, legacy: string) {
  const mine = a[`${prefix}/${own}`];
  if (mine !== undefined) return mine;
  const name = legacyNames(a, prefix)[legacy];
  return name === undefined ? undefined : a[name];
}

export function attemptOf(a: Record<string, string>, prefix: string, key: string): Count {
  return countOf(ownOrLegacy(a, prefix, `refresh-attempt-${key}`, "refresh-attempt"));
}
export function flapOf(a: Record<string, string>, prefix: string, key: string): string | undefined {
  return ownOrLegacy(a, prefix, `refresh-flap-detected-${key}`, "refresh-flap-detected");
}

const wid = (t: { kind: string; namespace: string; name: string }) => `${t.kind}/${t.namespace}/${t.name}`;
export const workloadsOf = (c: Config, key: string) =>
  new Set((c.images.find((i) => i.key === key)?.targets ?? []).map(wid));
export const shares = (c: Config, a: string, b: string) => {
  const mine = workloadsOf(c, a);
  return [...workloadsOf(c, b)].some((w) => mine.has(w));
};

/** The image's count forbids touching its workloads: locked out (count >= max) or untrusted. */
export function countBlocks(c: Config, o: Observed, key: string): boolean {
  const n = attemptOf(o.state.annotations, c.annotationPrefix, key);
  return n.kind === "untrusted" || (n.kind === "trusted" && n.value >= c.maxRefreshAttempts);
}

/** Resolved, recorded, not rejected, and the registry's digest differs from the recorded one. */
export function digestChanged(c: Config, o: Observed, key: string): boolean {
  const img = c.images.find((i) => i.key === key);
  const seen = o.digests?.[key];
  const a = o.state.annotations;
  const recorded = a[`${c.annotationPrefix}/last-refreshed-${key}-digest`];
  if (!img || img.pinned || !seen?.ok || recorded === undefined) return false;
  return seen.digest !== recorded && !rejected(c, o, key);
}

/** Paused by a human: the registry serves the digest they rejected (and there is a record). */
export function rejected(c: Config, o: Observed, key: string): boolean {
  const a = o.state.annotations;
  const seen = o.digests?.[key];
  const img = c.images.find((i) => i.key === key);
  return (
    !img?.pinned &&
    seen?.ok === true &&
    a[`${c.annotationPrefix}/last-refreshed-${key}-digest`] !== undefined &&
    a[`${c.annotationPrefix}/rejected-${key}-digest`] === seen.digest
  );
}

function targetsReadable(c: Config, o: Observed, key: string): boolean {
  const img = c.images.find((i) => i.key === key);
  return (img?.targets ?? []).every((t) => {
    const w = o.workloads?.[wid(t)];
    return w?.found === true && w.images[t.container] !== undefined;
  });
}

/**
 * The images SPEC lets this tick roll out. Individually due: changed digest, count trusted and
 * below the maximum, not claimed by another tick, every target readable. Blockers: a locked-out
 * or untrusted count, a rejected build, or a due image that cannot start. Isolation: a due image
 * sharing a workload with a blocker waits with it and then blocks in turn, to a fixpoint.
 */
export function expectedRollouts(c: Config, o: Observed): Set<string> {
  const keys = c.images.map((i) => i.key);
  const changed = keys.filter((k) => digestChanged(c, o, k));
  const blocked = new Set(keys.filter((k) => countBlocks(c, o, k) || rejected(c, o, k)));
  const due = new Set<string>();
  for (const k of changed) {
    if (blocked.has(k)) continue;
    if (o.claimed?.includes(k) || !targetsReadable(c, o, k)) blocked.add(k);
    else due.add(k);
  }
  for (let changedSet = true; changedSet; ) {
    changedSet = false;
    for (const k of due)
      if ([...blocked].some((b) => b !== k && shares(c, k, b))) {
        due.delete(k);
        blocked.add(k);
        changedSet = true;
      }
  }
  return due;
}
