// The closed set of outcomes, shared by logs, spans, metrics, Events and tests. Each image ends a
// tick with one of them; the tick's outcome is the most severe. One row per outcome, in severity
// order (most severe first); every list the code needs is derived from this table, so adding an
// outcome is one row, and the compiler flags the row left out.

/** The log level of a line that reports an outcome (an image's verdict or the tick's last line). */
export type LogLevel = "error" | "warn" | "info";

export interface OutcomeTraits {
  /** The process's exit code when this is the tick's outcome: a CronJob's alerting keys on it. */
  exit: 0 | 1;
  /** error: the Job fails; warn: someone should look; info: nothing for a human to do. */
  log: LogLevel;
  /** An image with this verdict holds a due image that shares a workload with it (they move together). */
  holdsSharers: boolean;
}

const row = (exit: 0 | 1, log: LogLevel, holdsSharers = false): OutcomeTraits => ({
  exit,
  log,
  holdsSharers,
});

/** Severity order: the first row is the most severe. */
export const OUTCOME_TABLE = {
  error: row(1, "error"),
  failed: row(1, "error"),
  frozen: row(1, "error"),
  stale: row(1, "error"),
  held: row(1, "error", true),
  // A lockout or a pause exists to stop churning the workload: an image sharing it waits too.
  locked_out: row(1, "error", true),
  paused: row(0, "warn", true),
  // pending is a soak doing its job: the message says when, nothing for a human to do.
  pending: row(0, "info"),
  drifted: row(0, "warn"),
  unresolved: row(0, "warn"),
  skipped: row(0, "info"),
  refreshed: row(0, "info"),
  recorded: row(0, "info"),
  noop: row(0, "info"),
} as const satisfies Record<string, OutcomeTraits>;

export type Outcome = keyof typeof OUTCOME_TABLE;

/** Every outcome, most severe first. */
export const OUTCOMES = Object.keys(OUTCOME_TABLE) as Outcome[];

export function exitCodeFor(outcome: Outcome): 0 | 1 {
  return OUTCOME_TABLE[outcome].exit;
}

export function logLevelFor(outcome: Outcome): LogLevel {
  return OUTCOME_TABLE[outcome].log;
}

/** Whether an image with this verdict holds the due images that share a workload with it. */
export function holdsSharers(outcome: Outcome): boolean {
  return OUTCOME_TABLE[outcome].holdsSharers;
}

/** Lower is more severe: the row's position in OUTCOME_TABLE. */
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
