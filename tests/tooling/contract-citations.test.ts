// The product contract is a document outside this repository, so nothing here may cite it by
// name: a comment or a doc that says "as the contract says, step 6" points a reader at a text
// they do not have. Each rule is stated in its own words instead. The name is the uppercase word
// (a Kubernetes object's lowercase `spec` field is another thing and is left alone); the pattern
// is assembled from halves so that this file does not hold it.
//
// The team's reference notes live outside the repository as well, so the same goes for them: a
// comment states the fact, or cites the public source it rests on (a Kubernetes source path, a
// docs URL, an RFC section). A note is cited by its file name or by a bare section number
// ("reference §7"), so both are caught: a section sign is allowed only after an RFC number.
import { expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { needTool } from "../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..");
const SELF = "tests/tooling/contract-citations.test.ts";
const NAME = new RegExp(`\\b${"SP"}${"EC"}\\b`);
/** The reference notes' file names as they are today (without `.md`, which a citation may drop). */
const NOTE_NAMES = [
  "kubernetes-and-registry-semantics",
  "live-spec-and-credentials",
  "opentelemetry-for-cronjobs",
  "real-control-plane",
  "what-users-of-image-updaters-ask-for",
];
const NOTE = new RegExp(`\\b(${NOTE_NAMES.join("|")})\\b`);
const SECTION = /(?<!\bRFC \d+ )§/;
/**
 * Files whose note citations belong to work owned elsewhere at the moment; each entry goes when
 * its file is reworded (the test fails on an entry whose file no longer cites a note).
 */
const PENDING: Record<string, string> = {};
const missing = needTool("git", { apt: "git" });

/** Every file git tracks, as the working tree holds it. */
function trackedFiles(): string[] {
  const r = Bun.spawnSync(["git", "ls-files", "-z"], { cwd: ROOT });
  if (r.exitCode !== 0)
    throw new Error(`Cannot list tracked files: git ls-files said ${r.stderr.toString()}`);
  return r.stdout.toString().split("\0").filter(Boolean);
}

/** `path:line: text` for each line of the file that `cites` says is a citation. */
function citations(path: string, cites: (line: string) => boolean): string[] {
  const full = join(ROOT, path);
  const stat = statSync(full, { throwIfNoEntry: false });
  if (!stat?.isFile()) return []; // deleted in the working tree, or a symlink to a folder
  const text = readFileSync(full, "utf8");
  return text.split("\n").flatMap((line, i) => (cites(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []));
}

const citesNote = (line: string): boolean => NOTE.test(line) || SECTION.test(line);

test.skipIf(missing)("no tracked file cites the contract document by name", () => {
  const files = trackedFiles();
  expect(files.length).toBeGreaterThan(100); // the listing really is the repository's
  expect(files.flatMap((f) => citations(f, (l) => NAME.test(l)))).toEqual([]);
});

test.skipIf(missing)("no tracked file cites the team's reference notes", () => {
  const files = trackedFiles().filter((f) => f !== SELF);
  expect(files.length).toBeGreaterThan(100);
  const outside = files.filter((f) => !(f in PENDING));
  expect(outside.flatMap((f) => citations(f, citesNote))).toEqual([]);
  const stale = Object.keys(PENDING).filter((f) => citations(f, citesNote).length === 0);
  expect(stale).toEqual([]); // reworded: drop the entry from PENDING
});

test("the pattern finds the name as a word, and only the uppercase word", () => {
  const word = `${"SP"}${"EC"}`;
  const hits = [`per ${word} step 6`, `${word}'s table`, `(${word} "Logs")`].map((s) => NAME.test(s));
  const misses = ["spec.template.spec", "the live spec", "Spec", `${word}IAL`, `X_${word}`].map((s) =>
    NAME.test(s),
  );
  expect({ hits, misses }).toEqual({ hits: [true, true, true], misses: [false, false, false, false, false] });
});

test("the note patterns find a note's name or a bare section, not an RFC section or a like name", () => {
  const hits = [
    "(reference live-spec-and-credentials.md §1.2; argo-cd ...)",
    "see real-control-plane.md",
    "what-users-of-image-updaters-ask-for",
    "(reference §7.1)",
    'describe("generation rules per kind (§1.5)"',
    "the 422 of §3.3",
  ].map(citesNote);
  const misses = [
    "WWW-Authenticate parsing (RFC 9110 §11.6.1)",
    'import { startControlPlane } from "./control-plane.ts"',
    "github.com/envoyproxy/go-control-plane v0.9.0/go.mod",
    "tests/e2e/live-spec.e2e.test.ts",
    "distribution/reference's normalisation rules",
  ].map(citesNote);
  expect({ hits, misses }).toEqual({ hits: hits.map(() => true), misses: misses.map(() => false) });
});
