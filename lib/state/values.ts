// One parser per kind of stored value. Whatever a store or an annotation holds is read once into
// a Field: absent, trusted (a typed value) or untrusted (the raw text, kept so that plan can hold
// the image or clear the key, and never collapsed to a default that could churn a workload).
import type { KeyKind } from "./keys.ts";

export type Field<T> =
  | { kind: "absent" }
  | { kind: "trusted"; value: T; raw: string }
  | { kind: "untrusted"; raw: string };

export interface Candidate {
  digest: string;
  /** First seen, ms since the epoch. */
  seen: number;
}

/**
 * How a refresh attempt ended. `started` is written with the count and stays when the tick died;
 * only failed, reverted, revert_failed and regressed are a build seen to fail.
 */
export const ENDINGS = [
  "started",
  "verified",
  "failed",
  "reverted",
  "revert_failed",
  "regressed",
  "refused",
  "interrupted",
] as const;
export type Ending = (typeof ENDINGS)[number];

/** The last refresh attempt of an image: its build, how it ended, and when (the tick's clock, ms). */
export interface Attempt {
  digest: string;
  ending: Ending;
  at: number;
}

/** The endings where the build itself was seen to fail; every other one names no failed build. */
export const seenToFail = (e: Ending): boolean =>
  e === "failed" || e === "reverted" || e === "revert_failed" || e === "regressed";

/** The typed value of each kind of key. */
export interface KindValue {
  counter: number;
  marker: string;
  digest: string;
  list: Candidate[];
  time: number;
  traceparent: string;
  attempt: Attempt;
}

// A counter read must fail closed: "abc", "", "-1", "1e3" or " 2" collapsing to 0 is how a
// flapping workload gets churned forever. Only plain decimal digits are believed.
const TRUSTED_INTEGER = /^[0-9]{1,9}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

const time = (raw: string): number | undefined => (RFC3339.test(raw) ? Date.parse(raw) : undefined);

/** RFC 3339 in whole seconds, as the API server's `Date` has them. */
export const stamp = (ms: number): string => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

function candidates(raw: string): Candidate[] | undefined {
  const list: Candidate[] = [];
  for (const entry of raw.split(",")) {
    const [digest = "", seen = "", ...rest] = entry.split("=");
    const at = time(seen);
    if (rest.length > 0 || !DIGEST.test(digest) || at === undefined) return undefined;
    if (list.some((c) => c.digest === digest)) return undefined;
    list.push({ digest, seen: at });
  }
  return list;
}

function attempt(raw: string): Attempt | undefined {
  const [digest = "", ending = "", when = "", ...rest] = raw.split(" ");
  const at = time(when);
  if (rest.length > 0 || !DIGEST.test(digest) || at === undefined) return undefined;
  if (!(ENDINGS as readonly string[]).includes(ending)) return undefined;
  return { digest, ending: ending as Ending, at };
}

type Parser<K extends KeyKind> = (raw: string) => KindValue[K] | undefined;

const PARSERS: { [K in KeyKind]: Parser<K> } = {
  counter: (raw) => (TRUSTED_INTEGER.test(raw) ? Number(raw) : undefined),
  marker: (raw) => raw,
  digest: (raw) => (DIGEST.test(raw) ? raw : undefined),
  list: candidates,
  time,
  traceparent: (raw) => (TRACEPARENT.test(raw) ? raw : undefined),
  attempt,
};

const FORMATTERS: { [K in KeyKind]: (v: KindValue[K]) => string } = {
  counter: (n) => String(n),
  marker: (s) => s,
  digest: (s) => s,
  list: (l) => l.map((c) => `${c.digest}=${stamp(c.seen)}`).join(","),
  time: stamp,
  traceparent: (s) => s,
  attempt: (a) => `${a.digest} ${a.ending} ${stamp(a.at)}`,
};

export function parseValue<K extends KeyKind>(kind: K, raw: string | undefined): Field<KindValue[K]> {
  if (raw === undefined) return { kind: "absent" };
  const value = (PARSERS[kind] as Parser<K>)(raw);
  return value === undefined ? { kind: "untrusted", raw } : { kind: "trusted", value, raw };
}

/** The stored text of a typed value; an empty candidate list is no key at all (null). */
export function formatValue<K extends KeyKind>(kind: K, value: KindValue[K]): string | null {
  if (kind === "list" && (value as Candidate[]).length === 0) return null;
  return (FORMATTERS[kind] as (v: KindValue[K]) => string)(value);
}

/** The stored text of a field, exactly as read (so an unchanged book writes back what it read). */
export const rawOf = <T>(f: Field<T>): string | undefined => (f.kind === "absent" ? undefined : f.raw);

/** A trusted or absent counter as a number; undefined when it is not to be believed. */
export function countOf(f: Field<number>): number | undefined {
  return f.kind === "absent" ? 0 : f.kind === "trusted" ? f.value : undefined;
}

/** The value when trusted, else undefined. */
export const trusted = <T>(f: Field<T>): T | undefined => (f.kind === "trusted" ? f.value : undefined);

/** The value to show in logs for a stored value that may be anything a human typed. */
export function quoteForLog(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
