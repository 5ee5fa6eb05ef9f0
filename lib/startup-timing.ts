// An opt-in probe of the start-up path, for the bench: with IMAGE_REFRESH_STARTUP_TIMING set to a
// file path, each mark() records the epoch time (ms, fractional) at which the process reached a
// named point and the CPU time (user + system, ms) it had used by then, and the marks are
// appended to that file as one JSON line when the process exits: {"at": {...}, "cpu": {...}}.
// Off (the variable unset, as in every real run) a mark is one comparison: nothing is recorded,
// nothing is written, nothing else is loaded.
//
// With IMAGE_REFRESH_STARTUP_FUNCTIONS=1 as well, each mark also counts the functions the process
// has run so far (JavaScriptCore's code blocks, from bun:jsc's heapStats): "functions": {...}.
// A start-up's time above a bare script's is mostly code run for the first time, and the count
// says how much of it each step runs, a figure that does not move with the machine. Counting
// walks the heap, so the bench takes it in runs of its own, never in the runs it times.
import { appendFileSync } from "node:fs";

const file = process.env.IMAGE_REFRESH_STARTUP_TIMING;
const counting = file !== undefined && process.env.IMAGE_REFRESH_STARTUP_FUNCTIONS === "1";
const marks: Array<[string, number, number, number | undefined]> = [];

/** Notes that the process reached `name` now. */
export function mark(name: string): void {
  if (!file) return;
  const cpu = process.cpuUsage();
  const at = performance.timeOrigin + performance.now();
  marks.push([name, at, (cpu.user + cpu.system) / 1000, counting ? functionsRun() : undefined]);
}

/** How many functions have run so far: the code blocks alive in JavaScriptCore's heap. */
function functionsRun(): number {
  const { heapStats } = require("bun:jsc") as typeof import("bun:jsc");
  return heapStats().objectTypeCounts.FunctionCodeBlock ?? 0;
}

/** Appends the marks as one JSON line (the first mark of a name wins). */
export function writeMarks(): void {
  if (!file || marks.length === 0) return;
  const at: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  const functions: Record<string, number> = {};
  for (const [name, t, c, f] of marks) {
    at[name] ??= t;
    cpu[name] ??= c;
    if (f !== undefined) functions[name] ??= f;
  }
  try {
    appendFileSync(file, `${JSON.stringify(counting ? { at, cpu, functions } : { at, cpu })}\n`);
  } catch {
    // a probe that cannot write changes nothing about the run
  }
}
