// Durations as the configuration writes them: 500ms, 15s, 10m, 1h, 2d, and sums such as 1h30m or 2m30s. Units
// come largest first and at most once each, so a value reads one way only (no `30m1h`, `1m1m`).

// A day is 24 hours: a soak (minimumAge) is often counted in days.
const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;
const GROUPS =
  "(?:([0-9]{1,9})d)?(?:([0-9]{1,9})h)?(?:([0-9]{1,9})m(?!s))?(?:([0-9]{1,9})s)?(?:([0-9]{1,9})ms)?$";
const SUM = new RegExp(`^${GROUPS}`);

/**
 * The config's duration grammar as one regular expression, for the schema (and so the JSON
 * Schema): not empty, and with `nonZero` not made of zeros alone (`0s`, `0d0h` are zero).
 */
export function durationPattern(nonZero: boolean): RegExp {
  return new RegExp(`^(?=.)${nonZero ? "(?![0dhms]+$)" : ""}${GROUPS}`);
}

/** Milliseconds for a duration string, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  const m = SUM.exec(trimmed);
  if (!m || trimmed === "") return undefined;
  const [, d, h, min, s, ms] = m;
  return (
    Number(d ?? 0) * UNIT_MS.d +
    Number(h ?? 0) * UNIT_MS.h +
    Number(min ?? 0) * UNIT_MS.m +
    Number(s ?? 0) * UNIT_MS.s +
    Number(ms ?? 0)
  );
}

/** A duration as config spells it, in its largest whole unit (`10m`, `90s`, `1500ms`): it parses back. */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** `2h59m`, `40s`: a wait as a human reads it, whole seconds. */
export function formatWait(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [h ? `${h}h` : "", m ? `${m}m` : "", s % 60 || s === 0 ? `${s % 60}s` : ""];
  return parts.join("");
}
