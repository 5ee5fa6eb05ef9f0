// `candidates-<key>` (minimumAge): the builds of a tag waiting out their age, as
// `<digest>=<RFC 3339 first seen>`, comma-separated, newest first. Pure: the clock comes in.
//
// At most MAX are kept, and always the oldest: a tag pushed faster than minimumAge keeps its
// oldest build ageing until it rolls out (the ratchet), while the builds trimmed from the middle
// of the list never roll out (their first-seen time is gone; seen again, they start over).

export const MAX_CANDIDATES = 5;

export interface Candidate {
  digest: string;
  /** First seen, ms since the epoch (whole seconds: the API server's Date). */
  seen: number;
}

export interface ParsedCandidates {
  list: Candidate[];
  /** Entries that could not be read (kept out of the list; the next write drops them). */
  unreadable: string[];
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function parseCandidates(raw: string | undefined): ParsedCandidates {
  const out: ParsedCandidates = { list: [], unreadable: [] };
  if (raw === undefined || raw.trim() === "") return out;
  for (const entry of raw.split(",")) {
    const [digest = "", time = "", ...rest] = entry.trim().split("=");
    const seen = RFC3339.test(time) ? Date.parse(time) : Number.NaN;
    if (rest.length > 0 || !DIGEST.test(digest) || !Number.isFinite(seen)) out.unreadable.push(entry.trim());
    else if (!out.list.some((c) => c.digest === digest)) out.list.push({ digest, seen });
  }
  out.list = newestFirst(out.list);
  return out;
}

/** Newest first; a tie keeps the order it had (stable sort). */
function newestFirst(list: Candidate[]): Candidate[] {
  return [...list].sort((a, b) => b.seen - a.seen);
}

export function formatCandidates(list: Candidate[]): string | null {
  if (list.length === 0) return null;
  return list.map((c) => `${c.digest}=${stamp(c.seen)}`).join(",");
}

/** The list with `digest` first seen at `clock` if it is new, trimmed to MAX keeping the oldest. */
/** The list with `digest` first seen at `clock` if it is new (untrimmed: see `trim`). */
export function addCandidate(list: Candidate[], digest: string, clock: number): Candidate[] {
  if (list.some((c) => c.digest === digest)) return list;
  return newestFirst([{ digest, seen: clock }, ...list]);
}

/**
 * At most MAX: the newest and the oldest. `keep` (the candidate this tick rolls out) is never
 * trimmed: an aged build must not give way to a younger one, and a failed rollout retries it.
 */
export function trim(list: Candidate[], keep?: string): Candidate[] {
  if (list.length <= MAX_CANDIDATES) return list;
  const oldest = list[list.length - 1] as Candidate;
  const kept = list.slice(0, MAX_CANDIDATES - 1);
  const k = list.find((c) => c.digest === keep);
  if (!k || kept.includes(k) || k === oldest) return [...kept, oldest];
  return [...list.slice(0, MAX_CANDIDATES - 2), k, oldest];
}

/** The newest candidate seen at least `minimumAgeMs` ago that may roll out (not excluded). */
export function chooseCandidate(
  list: Candidate[],
  {
    clock,
    minimumAgeMs,
    excluded,
  }: { clock: number; minimumAgeMs: number; excluded: ReadonlyArray<string | undefined> },
): Candidate | undefined {
  return list.find((c) => clock - c.seen >= minimumAgeMs && !excluded.includes(c.digest));
}

/**
 * After a rollout to `chosen` is recorded: only the candidates newer than it wait on, less those
 * `dropped` (the recorded digest, and a rejected build, whose marker that record removes).
 */
export function afterRollout(
  list: Candidate[],
  chosen: Candidate,
  dropped: ReadonlyArray<string | undefined>,
): Candidate[] {
  const at = list.findIndex((c) => c.digest === chosen.digest);
  return list.slice(0, at < 0 ? list.length : at).filter((c) => !dropped.includes(c.digest));
}

export function dueAt(candidate: Candidate, minimumAgeMs: number): number {
  return candidate.seen + minimumAgeMs;
}

/** RFC 3339 in whole seconds, as stored. */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}
