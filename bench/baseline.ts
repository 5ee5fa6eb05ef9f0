// `--baseline=REF`: the product as it was at a git commit, compiled with today's build flags and
// node_modules, so that a change's cost shows next to the current binary in the same run (the
// same machine load, the same worlds) rather than against figures from another day.
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { compile } from "./clients.ts";

const ROOT = join(import.meta.dir, "..");

export interface Baseline {
  /** The commit as given, e.g. `9b5deab` or `main~3`. */
  ref: string;
  command: string[];
}

/** Extracts REF's tree into `dir` and compiles its refresh.ts; throws when REF does not exist. */
export async function buildBaseline(ref: string, dir: string): Promise<Baseline> {
  const src = join(dir, "baseline-src");
  mkdirSync(src, { recursive: true });
  const tar = execFileSync("git", ["-C", ROOT, "archive", "--format=tar", ref], { maxBuffer: 1 << 28 });
  execFileSync("tar", ["-x", "-C", src], { input: tar });
  // The old tree resolves its imports from today's packages; a ref whose package.json differs in
  // dependencies would need its own install, which the bench does not attempt.
  symlinkSync(join(ROOT, "node_modules"), join(src, "node_modules"));
  const command = await compile(join(src, "refresh.ts"), join(dir, "baseline"));
  return { ref, command };
}
