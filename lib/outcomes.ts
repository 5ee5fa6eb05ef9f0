// The closed set of tick outcomes, shared by logs, spans, metrics, Events and tests.
// SPEC "Precise rules": noop, recorded, refreshed, skipped and locked_out exit 0; the rest exit 1.

export const OUTCOMES = [
  "noop",
  "recorded",
  "refreshed",
  "skipped",
  "frozen",
  "locked_out",
  "held",
  "failed",
  "error",
] as const;
export type Outcome = (typeof OUTCOMES)[number];

const EXIT_ZERO: ReadonlySet<Outcome> = new Set(["noop", "recorded", "refreshed", "skipped", "locked_out"]);

export function exitCodeFor(outcome: Outcome): 0 | 1 {
  return EXIT_ZERO.has(outcome) ? 0 : 1;
}

/** Exit code for usage and configuration errors; no network call was made. */
export const EXIT_USAGE = 2;
