// An opt-in probe of the start-up path, for the bench: with IMAGE_REFRESH_STARTUP_TIMING set to a
// file path, each mark() records the epoch time (ms, fractional) at which the process reached a
// named point and the CPU time (user + system, ms) it had used by then, and the marks are
// appended to that file as one JSON line when the process exits: {"at": {...}, "cpu": {...}}.
// Off (the variable unset, as in every real run) a mark is one comparison: nothing is recorded,
// nothing is written, nothing else is loaded.
import { appendFileSync } from "node:fs";

const file = process.env.IMAGE_REFRESH_STARTUP_TIMING;
const marks: Array<[string, number, number]> = [];

/** Notes that the process reached `name` now. */
export function mark(name: string): void {
  if (!file) return;
  const cpu = process.cpuUsage();
  marks.push([name, performance.timeOrigin + performance.now(), (cpu.user + cpu.system) / 1000]);
}

/** Appends the marks as one JSON line (the first mark of a name wins). */
export function writeMarks(): void {
  if (!file || marks.length === 0) return;
  const at: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  for (const [name, t, c] of marks) {
    at[name] ??= t;
    cpu[name] ??= c;
  }
  try {
    appendFileSync(file, `${JSON.stringify({ at, cpu })}\n`);
  } catch {
    // a probe that cannot write changes nothing about the run
  }
}
