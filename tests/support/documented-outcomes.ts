// The outcomes as docs/outcomes.md documents them ("Exit codes and outcomes") and the tests hold the
// product to them: written out here, not imported from lib/outcomes.ts, so that a change in lib
// cannot move what the tests expect.

/** Most severe first, in the order of the table in docs/outcomes.md. */
export const DOCUMENTED_SEVERITY = [
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

/** The outcomes that exit 1. */
export const DOCUMENTED_EXIT_ONE: ReadonlySet<string> = new Set([
  "error",
  "failed",
  "frozen",
  "stale",
  "held",
  "locked_out",
]);

/** The documented exit code of an outcome. */
export const documentedExitCode = (o: string): 0 | 1 => (DOCUMENTED_EXIT_ONE.has(o) ? 1 : 0);
