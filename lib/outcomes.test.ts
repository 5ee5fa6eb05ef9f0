// Outcomes: every outcome's exit code and the severity order, as tables; a CronJob's
// alerting keys on the exit code, and the tick's outcome is the most severe image verdict.
import { expect, test } from "bun:test";
import { DOCUMENTED_SEVERITY } from "../tests/support/documented-outcomes.ts";
import { EXIT_USAGE, exitCodeFor, holdsSharers, logLevelFor, mostSevere, OUTCOMES } from "./outcomes.ts";

const WANT: Record<(typeof OUTCOMES)[number], 0 | 1> = {
  error: 1,
  failed: 1,
  frozen: 1,
  stale: 1,
  held: 1,
  locked_out: 1,
  paused: 0,
  pending: 0,
  drifted: 0,
  unresolved: 0,
  skipped: 0,
  refreshed: 0,
  recorded: 0,
  noop: 0,
};

test("each outcome exits as documented; usage errors exit 2", () => {
  expect(Object.fromEntries(OUTCOMES.map((o) => [o, exitCodeFor(o)]))).toEqual(WANT);
  expect(EXIT_USAGE).toBe(2);
});

test("each outcome's log level: error when the Job fails, info when nobody need look, warn otherwise", () => {
  const level = Object.fromEntries(OUTCOMES.map((o) => [o, logLevelFor(o)]));
  expect(level).toEqual({
    error: "error",
    failed: "error",
    frozen: "error",
    stale: "error",
    held: "error",
    locked_out: "error",
    paused: "warn",
    pending: "info",
    drifted: "warn",
    unresolved: "warn",
    skipped: "info",
    refreshed: "info",
    recorded: "info",
    noop: "info",
  });
  for (const o of OUTCOMES) expect(logLevelFor(o) === "error").toBe(exitCodeFor(o) === 1);
});

test("held, locked_out and paused, and only they, hold the images that share a workload", () => {
  expect(OUTCOMES.filter(holdsSharers)).toEqual(["held", "locked_out", "paused"]);
});

test("the order of severity is the documented table, top to bottom", () => {
  expect([...OUTCOMES]).toEqual([...DOCUMENTED_SEVERITY]);
});

test.each([
  [[], "noop"],
  [["noop", "recorded"], "recorded"],
  [["refreshed", "unresolved"], "unresolved"],
  [["refreshed", "locked_out", "unresolved"], "locked_out"],
  [["locked_out", "stale"], "stale"],
  [["held", "failed", "paused"], "failed"],
  [["noop", "error"], "error"],
] as const)("most severe of %j is %s", (list, want) => {
  expect(mostSevere(list)).toBe(want);
});
