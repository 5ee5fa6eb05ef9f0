// The product contract is a document outside this repository, so nothing here may cite it by
// name: a comment or a doc that says "as the contract says, step 6" points a reader at a text
// they do not have. Each rule is stated in its own words instead. The name is the uppercase word
// (a Kubernetes object's lowercase `spec` field is another thing and is left alone); the pattern
// is assembled from halves so that this file does not hold it.
import { expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { needTool } from "../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..");
const NAME = new RegExp(`\\b${"SP"}${"EC"}\\b`);
const missing = needTool("git", { apt: "git" });

/** Every file git tracks, as the working tree holds it. */
function trackedFiles(): string[] {
  const r = Bun.spawnSync(["git", "ls-files", "-z"], { cwd: ROOT });
  if (r.exitCode !== 0)
    throw new Error(`Cannot list tracked files: git ls-files said ${r.stderr.toString()}`);
  return r.stdout.toString().split("\0").filter(Boolean);
}

/** `path:line: text` for each line that names the contract document. */
function citations(path: string): string[] {
  const full = join(ROOT, path);
  const stat = statSync(full, { throwIfNoEntry: false });
  if (!stat?.isFile()) return []; // deleted in the working tree, or a symlink to a folder
  const text = readFileSync(full, "utf8");
  return text.split("\n").flatMap((line, i) => (NAME.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []));
}

test.skipIf(missing)("no tracked file cites the contract document by name", () => {
  const files = trackedFiles();
  expect(files.length).toBeGreaterThan(100); // the listing really is the repository's
  expect(files.flatMap(citations)).toEqual([]);
});

test("the pattern finds the name as a word, and only the uppercase word", () => {
  const word = `${"SP"}${"EC"}`;
  const hits = [`per ${word} step 6`, `${word}'s table`, `(${word} "Logs")`].map((s) => NAME.test(s));
  const misses = ["spec.template.spec", "the live spec", "Spec", `${word}IAL`, `X_${word}`].map((s) =>
    NAME.test(s),
  );
  expect({ hits, misses }).toEqual({ hits: [true, true, true], misses: [false, false, false, false, false] });
});
