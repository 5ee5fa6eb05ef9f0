// What each image's counters are, computed from the annotations alone, without lib/annotations.ts
// or lib/tick/ (oracle-verdict.ts builds the verdict and isolation on it): the properties compare
// plan() and the real tick against this, so a bug shared by the two halves of lib cannot hide
// behind itself.
import type { Config } from "../../lib/config.ts";
import { bookData } from "../../lib/state/book.ts";
import type { Observed } from "../../lib/tick/model.ts";

export type Count = { kind: "absent" } | { kind: "trusted"; value: number } | { kind: "untrusted" };

/** A trusted counter: plain decimal digits, at most nine; anything else is untrusted. */
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

/** An image's own key if present, else the legacy one (a legacy key counts for every image). */
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
/** The store keys that are one image's own, spelled here (not from lib/state/keys.ts). */
export const imageKeysOf = (key: string) => [
  `last-refreshed-${key}-digest`,
  `refresh-attempt-${key}`,
  `refresh-flap-detected-${key}`,
  `failed-${key}-digest`,
  `refresh-attempt-traceparent-${key}`,
  `skip-streak-${key}`,
  `unresolved-streak-${key}`,
  `repin-streak-${key}`,
  `rejected-${key}-digest`,
  `candidates-${key}`,
  `paused-${key}`,
  `last-attempt-${key}`,
  `adopt-${key}`,
];
export const shares = (c: Config, a: string, b: string) => {
  const mine = workloadsOf(c, a);
  return [...workloadsOf(c, b)].some((w) => mine.has(w));
};

/**
 * The store's data as plan() saw it: every key by its stored name, with the text that was read
 * (the oracle spells the key names itself and judges each value's trust from this text).
 */
export const dataOf = (o: Observed): Record<string, string> => bookData(o.book);
/** One stored value of the observation, by its data key name. */
export const stored = (o: Observed, name: string): string | undefined => dataOf(o)[name];
/** The image's attempt count in the store (legacy annotations are observe's to migrate). */
export const storedAttempt = (o: Observed, key: string): Count =>
  countOf(stored(o, `refresh-attempt-${key}`));

/** The image's count forbids touching its workloads: locked out (count >= max) or untrusted. */
export function countBlocks(c: Config, o: Observed, key: string): boolean {
  const n = storedAttempt(o, key);
  return n.kind === "untrusted" || (n.kind === "trusted" && n.value >= c.maxRefreshAttempts);
}
