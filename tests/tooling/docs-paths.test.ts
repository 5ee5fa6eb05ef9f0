// The docs are true to the tree. Every repository path that README.md, ARCHITECTURE.md or a page
// of docs/ names in backticks exists; and ARCHITECTURE.md, which promises a row for every file of
// lib/ and names the test folders, has them all. A name without a folder in a table cell or a
// paragraph (`values.ts` after `lib/state/keys.ts`) is read in the folder of the path before it.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { needTool } from "../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..");
const missing = needTool("git", { apt: "git" });

/** Every file git knows of or would add (new files count before their commit), as paths. */
function treeFiles(): string[] {
  const r = Bun.spawnSync(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
  });
  if (r.exitCode !== 0) throw new Error(`Cannot list the tree: git ls-files said ${r.stderr.toString()}`);
  return r.stdout
    .toString()
    .split("\0")
    .filter((f) => f && existsSync(join(ROOT, f)));
}

const DOCS = [
  "README.md",
  "ARCHITECTURE.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const SHORTHAND = /^[\w.-]+(\/[\w.*-]+)*(\/|\.(ts|md|ya?ml|json|sh|go|tpl|txt|mod|sum|png))$/;

interface Unit {
  text: string;
  cell: boolean;
}

/** Each table cell (where a shorthand is read), and each paragraph or list item of prose (where it is not). */
function units(text: string): Unit[] {
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  return prose
    .split(/\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )/)
    .flatMap((block): Unit[] =>
      block.trimStart().startsWith("|")
        ? block.split("\n").flatMap((row) => row.split("|").map((cell) => ({ text: cell, cell: true })))
        : [{ text: block, cell: false }],
    );
}

/**
 * Each path a doc names in backticks, from the repository's root (`[doc, path]`): a word whose
 * first folder is one of the root's (or a file at the root); in a table cell also a lone name
 * after one, read in its folder. A command (`bun scripts/gen-checks.ts`) counts by its paths.
 */
export function namedPaths(doc: string, text: string, roots: RootEntries): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const unit of units(text)) {
    let folder: string | undefined;
    for (const span of unit.text.matchAll(/`([^`\n]+)`/g)) {
      const words = (span[1] as string).split(/\s+/);
      for (const raw of words) {
        const word = raw.replace(/^[("']+|[)"',;]+$/g, "").replace(/:\d+$/, "");
        if (!word || /[<>{}$~=@]/.test(word) || word.startsWith("/")) continue;
        const first = word.split("/")[0] as string;
        if (word.includes("/") ? roots.folders.has(first) : roots.files.has(word)) {
          out.push([doc, word]);
          folder = word.endsWith("/") ? word : `${posix.dirname(word)}/`;
        } else if (unit.cell && words.length === 1 && folder !== undefined && SHORTHAND.test(word)) {
          out.push([doc, posix.join(folder, word)]);
        }
      }
    }
  }
  return out;
}

interface RootEntries {
  folders: ReadonlySet<string>;
  files: ReadonlySet<string>;
}

const rootEntries = (files: readonly string[]): RootEntries => ({
  folders: new Set(files.filter((f) => f.includes("/")).map((f) => f.split("/")[0] as string)),
  files: new Set(files.filter((f) => !f.includes("/"))),
});

function exists(path: string, files: readonly string[]): boolean {
  if (path.includes("*")) return files.some((f) => new Bun.Glob(path).match(f));
  const clean = path.replace(/\/$/, "");
  return files.some((f) => f === clean || f.startsWith(`${clean}/`));
}

const read = (doc: string) => readFileSync(join(ROOT, doc), "utf8");

test.skipIf(missing)(
  "every backticked repository path in README.md, ARCHITECTURE.md and docs/ exists",
  () => {
    const files = treeFiles();
    const named = DOCS.flatMap((doc) => namedPaths(doc, read(doc), rootEntries(files)));
    expect(named.length).toBeGreaterThan(100); // the docs really were read
    const gone = named.filter(([, p]) => !exists(p, files)).map(([doc, p]) => `${doc}: ${p} does not exist`);
    expect(gone).toEqual([]);
  },
);

test.skipIf(missing)("ARCHITECTURE.md has a row for every file of lib/ and names every test folder", () => {
  const files = treeFiles();
  const named = new Set(
    namedPaths("ARCHITECTURE.md", read("ARCHITECTURE.md"), rootEntries(files)).map(([, p]) => p),
  );
  const lib = files.filter((f) => f.startsWith("lib/") && !f.endsWith(".test.ts"));
  const testFolders = [
    ...new Set(files.filter((f) => /^tests\/[^/]+\//.test(f)).map((f) => f.split("/")[1])),
  ];
  const unnamed = [
    ...lib.filter((f) => !named.has(f)).map((f) => `${f}: no row of ARCHITECTURE.md names it`),
    ...testFolders
      .filter((d) => !named.has(`tests/${d}/`))
      .map((d) => `tests/${d}/: ARCHITECTURE.md's tests row does not name it`),
  ];
  expect(unnamed).toEqual([]);
});

test("a lone name in a table cell is read in the folder of the path before it; prose and commands are not", () => {
  const roots = rootEntries(["lib/a.ts", "tests/b.ts", "scripts/c.ts", "README.md"]);
  const doc = [
    "| a | `lib/state/keys.ts`, `values.ts`, `lib/tick/observe.ts` and `plan/plan.ts` | `book.ts` |",
    "| b | `tests/e2e/`, `real/` (`npm run bench`, `bun scripts/y.ts`, `z.ts`) |",
    "",
    "See `tests/sim/` and `real.ts`, `README.md`, `lib/x.ts:12`, `apps/api`, `/spec/x`, `lib`.",
  ].join("\n");
  expect(namedPaths("D", doc, roots).map(([, p]) => p)).toEqual([
    "lib/state/keys.ts",
    "lib/state/values.ts",
    "lib/tick/observe.ts",
    "lib/tick/plan/plan.ts",
    "tests/e2e/",
    "tests/e2e/real/",
    "scripts/y.ts",
    "scripts/z.ts",
    "tests/sim/",
    "README.md",
    "lib/x.ts",
  ]);
});
