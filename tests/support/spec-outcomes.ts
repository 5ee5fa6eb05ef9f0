// SPEC "Outcomes" as the tests hold the product to it: written out here, not imported from
// lib/outcomes.ts, so that a change in lib cannot move what the tests expect.

/** Most severe first, in the order of SPEC's table. */
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

/** The outcomes SPEC's table gives exit 1. */
export const SPEC_EXIT_ONE: ReadonlySet<string> = new Set([
  "error",
  "failed",
  "frozen",
  "stale",
  "held",
  "locked_out",
]);

/** SPEC's exit code for an outcome. */
export const specExitCode = (o: string): 0 | 1 => (SPEC_EXIT_ONE.has(o) ? 1 : 0);
