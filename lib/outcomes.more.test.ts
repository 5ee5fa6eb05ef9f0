// SPEC "Precise rules": every outcome's exit code, as one table; a CronJob's alerting keys on it.
import { expect, test } from "bun:test";
import { EXIT_USAGE, exitCodeFor, OUTCOMES } from "./outcomes.ts";

const WANT: Record<(typeof OUTCOMES)[number], 0 | 1> = {
  noop: 0,
  recorded: 0,
  refreshed: 0,
  skipped: 0,
  locked_out: 0,
  frozen: 1,
  held: 1,
  failed: 1,
  error: 1,
};

test("each outcome exits as SPEC says; usage errors exit 2", () => {
  expect(Object.fromEntries(OUTCOMES.map((o) => [o, exitCodeFor(o)]))).toEqual(WANT);
  expect(EXIT_USAGE).toBe(2);
});
