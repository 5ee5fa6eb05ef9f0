// Test tiers. A test that needs a tool from Debian calls needTool() at the top of its file and
// guards its tests with `describe.skipIf(missing)` / `test.skipIf(missing)` (or describeWith). Without the tool and
// without CI it prints one line and skips, so `npm test` passes on a machine with only Node.js;
// with CI set a missing tool is a failure, because a check that did not run is not a pass and
// `.ci/run` installs every tool.
import { describe, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, relative } from "node:path";

export interface Tool {
  /** A command looked up on PATH, or an absolute path (e.g. musl's loader). */
  tool: string;
  /** The Debian package that provides it. */
  apt: string;
}

/** True when a CI run is asked for: any non-empty CI other than "0"/"false". */
export function inCi(env: Record<string, string | undefined> = process.env): boolean {
  const v = env.CI?.trim().toLowerCase();
  return v !== undefined && v !== "" && v !== "0" && v !== "false";
}

/** Where the tool is, or undefined. */
export function findTool(tool: string): string | undefined {
  if (tool.includes("/")) return existsSync(tool) ? tool : undefined;
  return Bun.which(tool) ?? undefined;
}

/** The test file that called needTool, for the skip line (the caller's frame in the stack). */
function callerFile(): string {
  const frames = (new Error().stack ?? "").split("\n");
  const own = import.meta.path;
  for (const f of frames) {
    const m = /\(?(\/[^():]+):\d+:\d+\)?\s*$/.exec(f);
    if (m?.[1] && m[1] !== own) return relative(join(import.meta.dir, "..", ".."), m[1]);
  }
  return "this test file";
}

/**
 * Checks the tools a test file needs; returns true when one is missing (pass it to skipIf).
 * Prints one line per missing tool; under CI also registers a failing test that says the same.
 */
export function needTool(tool: string, opts: { apt: string }): boolean {
  return needTools([{ tool, apt: opts.apt }], callerFile());
}

export function needTools(tools: readonly Tool[], file = callerFile()): boolean {
  const missing = tools.filter((t) => findTool(t.tool) === undefined);
  for (const t of missing) {
    const line = `skip: ${file} needs ${t.tool} (apt-get install ${t.apt})`;
    if (!inCi()) {
      console.log(line);
      continue;
    }
    test(`needs ${t.tool}`, () => {
      throw new Error(`${line}: CI is set, so a missing tool is a failure (.ci/run installs it)`);
    });
  }
  return missing.length > 0;
}

/**
 * describe() for a block whose body runs the tool while tests are collected (Bun runs the body of
 * a skipped describe too): when the tool is missing the body is not run and the block is one
 * skipped test.
 */
export function describeWith(missing: boolean): (name: string, fn: () => void) => void {
  if (!missing) return describe;
  return (name) => test.skipIf(true)(name, () => {});
}
