// The bookkeeping annotations on the state object (SPEC "State annotations"). With the prefix
// tracebloc.io these are exactly the keys the earlier shell job wrote, so state carries over.

export interface AnnotationKeys {
  attempt: string;
  flap: string;
  skipStreak: string;
  traceparent: string;
  digest(imageKey: string): string;
}

export function annotationKeys(prefix: string): AnnotationKeys {
  return {
    attempt: `${prefix}/refresh-attempt`,
    flap: `${prefix}/refresh-flap-detected`,
    skipStreak: `${prefix}/refresh-skip-streak`,
    traceparent: `${prefix}/refresh-attempt-traceparent`,
    digest: (key) => `${prefix}/last-refreshed-${key}-digest`,
  };
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

/** The value to show in logs for an annotation that may be anything a human typed. */
export function quoteForLog(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
