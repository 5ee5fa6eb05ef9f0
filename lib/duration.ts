// Durations as SPEC writes them: 500ms, 15s, 10m, 1h. One unit per value keeps them unambiguous.

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Milliseconds for a duration string, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const m = /^([0-9]{1,9})(ms|s|m|h)$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
