// The closed set of outcomes, shared by logs, spans, metrics, Events and tests. Each image ends a
// tick with one of them; the tick's outcome is the most severe (SPEC "Outcomes": this order).

export const OUTCOMES = [
  "error",
  "failed",
  "frozen",
  "stale",
  "held",
  "locked_out",
  "paused",
  "pending",
  "drifted",
  "unresolved",
  "skipped",
  "refreshed",
  "recorded",
  "noop",
] as const;
export type Outcome = (typeof OUTCOMES)[number];

const EXIT_ONE: ReadonlySet<Outcome> = new Set(["error", "failed", "frozen", "stale", "held"]);

export function exitCodeFor(outcome: Outcome): 0 | 1 {
  return EXIT_ONE.has(outcome) ? 1 : 0;
}

/** Lower is more severe: the index in OUTCOMES. */
export function severity(outcome: Outcome): number {
  return OUTCOMES.indexOf(outcome);
}

/** The most severe of several outcomes; `noop` for none. */
export function mostSevere(outcomes: Iterable<Outcome>): Outcome {
  let worst: Outcome = "noop";
  for (const o of outcomes) if (severity(o) < severity(worst)) worst = o;
  return worst;
}

/** Exit code for usage and configuration errors; no network call was made. */
export const EXIT_USAGE = 2;
