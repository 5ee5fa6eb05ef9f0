// The bookkeeping annotations on the state object. Counters are per
// image so that one image's trouble never holds back another; with the prefix tracebloc.io the
// digest and skip-streak keys are exactly those the earlier shell job wrote, and its single
// counter (the legacy keys) still counts for every image until the first counter write migrates it.

export interface ImageKeys {
  digest: string;
  attempt: string;
  flap: string;
  traceparent: string;
  unresolved: string;
  repin: string;
  /** Not a counter: the live image whose pause was announced, so the Event is posted once. */
  paused: string;
  rejected: string;
  candidates: string;
}

export interface AnnotationKeys {
  skipStreak: string;
  retryAfter: string;
  /** The single-counter keys of the earlier versions, read under any prefix. */
  legacy: { attempt: string; flap: string; traceparent: string };
  image(imageKey: string): ImageKeys;
  digest(imageKey: string): string;
}

export function annotationKeys(prefix: string): AnnotationKeys {
  const image = (key: string): ImageKeys => ({
    digest: `${prefix}/last-refreshed-${key}-digest`,
    attempt: `${prefix}/refresh-attempt-${key}`,
    flap: `${prefix}/refresh-flap-detected-${key}`,
    traceparent: `${prefix}/refresh-attempt-traceparent-${key}`,
    unresolved: `${prefix}/unresolved-streak-${key}`,
    repin: `${prefix}/repin-streak-${key}`,
    paused: `${prefix}/paused-${key}`,
    rejected: `${prefix}/rejected-${key}-digest`,
    candidates: `${prefix}/candidates-${key}`,
  });
  return {
    skipStreak: `${prefix}/refresh-skip-streak`,
    retryAfter: `${prefix}/registry-retry-after`,
    legacy: {
      attempt: `${prefix}/refresh-attempt`,
      flap: `${prefix}/refresh-flap-detected`,
      traceparent: `${prefix}/refresh-attempt-traceparent`,
    },
    image,
    digest: (key) => image(key).digest,
  };
}

const LEGACY_NAMES = ["refresh-attempt", "refresh-flap-detected", "refresh-attempt-traceparent"] as const;
type LegacyName = (typeof LEGACY_NAMES)[number];

/**
 * The legacy single-counter keys present on the state object, under any prefix (an installation
 * that changed its prefix still carries the old lockout). The configured prefix wins a tie.
 */
export function legacyKeys(
  annotations: Record<string, string>,
  prefix: string,
): Partial<Record<"attempt" | "flap" | "traceparent", string>> {
  const field: Record<LegacyName, "attempt" | "flap" | "traceparent"> = {
    "refresh-attempt": "attempt",
    "refresh-flap-detected": "flap",
    "refresh-attempt-traceparent": "traceparent",
  };
  const out: Partial<Record<"attempt" | "flap" | "traceparent", string>> = {};
  for (const name of Object.keys(annotations)) {
    const slash = name.lastIndexOf("/");
    const local = name.slice(slash + 1) as LegacyName;
    if (slash < 0 || !LEGACY_NAMES.includes(local)) continue;
    const f = field[local];
    if (out[f] === undefined || name === `${prefix}/${local}`) out[f] = name;
  }
  return out;
}

/** The counters of one image as a tick sees them: its own keys, else the legacy ones. */
export interface ImageCounters {
  attempt: Counter;
  /** Annotation the attempt count was read from (own or legacy); undefined when absent. */
  attemptFrom?: string;
  flap?: string;
  traceparent?: string;
  unresolved: Counter;
  rejected?: string;
}

export function imageCounters(
  annotations: Record<string, string>,
  prefix: string,
  imageKey: string,
): ImageCounters {
  const own = annotationKeys(prefix).image(imageKey);
  const legacy = legacyKeys(annotations, prefix);
  const pick = (mine: string, old: string | undefined) =>
    annotations[mine] !== undefined ? mine : old !== undefined ? old : undefined;
  const attemptFrom = pick(own.attempt, legacy.attempt);
  const flapFrom = pick(own.flap, legacy.flap);
  const traceFrom = pick(own.traceparent, legacy.traceparent);
  return {
    attempt: readCounter(attemptFrom && annotations[attemptFrom]),
    attemptFrom,
    flap: flapFrom && annotations[flapFrom],
    traceparent: traceFrom && annotations[traceFrom],
    unresolved: readCounter(annotations[own.unresolved]),
    rejected: annotations[own.rejected],
  };
}

/**
 * The writes that move the legacy counter onto every image's own keys ("every image's own
 * counter starts at the legacy value and the legacy keys are removed in the same patch"). An
 * image that has its own key keeps it. Empty when there is nothing legacy to migrate.
 */
export function migrationWrites(
  annotations: Record<string, string>,
  prefix: string,
  imageKeys: readonly string[],
): Record<string, string | null> {
  const legacy = legacyKeys(annotations, prefix);
  const names = Object.values(legacy);
  if (names.length === 0) return {};
  const out: Record<string, string | null> = {};
  const keys = annotationKeys(prefix);
  for (const k of imageKeys) {
    const own = keys.image(k);
    const copy: Array<[string, string | undefined]> = [
      [own.attempt, legacy.attempt],
      [own.flap, legacy.flap],
      [own.traceparent, legacy.traceparent],
    ];
    for (const [mine, old] of copy)
      if (old !== undefined && annotations[mine] === undefined) out[mine] = annotations[old] as string;
  }
  // Every legacy key goes, under any prefix: one left behind would count again once the images'
  // own counters are reset, and bring back a lockout the migration carried over.
  for (const n of Object.keys(annotations))
    if (n.includes("/") && (LEGACY_NAMES as readonly string[]).includes(n.slice(n.lastIndexOf("/") + 1)))
      out[n] = null;
  return out;
}

export type Counter =
  | { kind: "absent" }
  | { kind: "trusted"; value: number }
  | { kind: "untrusted"; raw: string };

// A counter read must fail closed: "abc", "", "-1", "1e3" or " 2" collapsing to 0 is how a
// flapping workload gets churned forever. Only plain decimal digits are believed.
const TRUSTED = /^[0-9]{1,9}$/;

export function readCounter(value: string | undefined): Counter {
  if (value === undefined) return { kind: "absent" };
  if (TRUSTED.test(value)) return { kind: "trusted", value: Number(value) };
  return { kind: "untrusted", raw: value };
}

/** A trusted or absent counter as a number; undefined when it is not to be believed. */
export function counterValue(c: Counter): number | undefined {
  return c.kind === "absent" ? 0 : c.kind === "trusted" ? c.value : undefined;
}

/** The value to show in logs for an annotation that may be anything a human typed. */
export function quoteForLog(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
