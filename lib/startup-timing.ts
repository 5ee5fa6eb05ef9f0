// An opt-in probe of the start-up path, for the bench: with IMAGE_REFRESH_STARTUP_TIMING set to a
// file path, each mark() records the epoch time (ms, fractional) at which the process reached a
// named point, and the marks are appended to that file as one JSON line when the process exits.
// Off (the variable unset, as in every real run) a mark is one comparison: nothing is recorded,
// nothing is written, nothing else is loaded.
import { appendFileSync } from "node:fs";

const file = process.env.IMAGE_REFRESH_STARTUP_TIMING;
const marks: Array<[string, number]> = [];

/** Notes that the process reached `name` now. */
export function mark(name: string): void {
  if (file) marks.push([name, performance.timeOrigin + performance.now()]);
}

/** Appends the marks as one JSON object `{name: epochMs}` (first mark of a name wins). */
export function writeMarks(): void {
  if (!file || marks.length === 0) return;
  const out: Record<string, number> = {};
  for (const [name, at] of marks) out[name] ??= at;
  try {
    appendFileSync(file, `${JSON.stringify(out)}\n`);
  } catch {
    // a probe that cannot write changes nothing about the run
  }
}
