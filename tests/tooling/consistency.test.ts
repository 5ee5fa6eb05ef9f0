// The README's command list, `image-refresh --help`, the outcome table and the runbook say the
// same thing: the commands and flags of --help (lib/cli.ts) are the README's, with the same
// synopsis and words; the outcome table (docs/outcomes.md) is lib/outcomes.ts row for row (order
// and exit code), and so is --help's exit-code list; every "`outcome`, exit N" and every
// `image-refresh <command> ARGS` in the README and the pages of docs/ (the runbook among them) is
// that outcome's exit code and that command's synopsis. The runbook's one section per alert is checked beside the rules
// (tests/telemetry/monitoring.test.ts); its Outcome lines are checked here.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseRules, RULES_PATH } from "../../k8s/monitoring/generate.ts";
import { COMMANDS, HELP } from "../../lib/cli.ts";
import { EXIT_USAGE, exitCodeFor, OUTCOMES, type Outcome } from "../../lib/outcomes.ts";
import { DOCUMENTED_SEVERITY, documentedExitCode } from "../support/documented-outcomes.ts";

const ROOT = join(import.meta.dir, "..", "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const RUNBOOK = readFileSync(join(ROOT, "docs", "on-call.md"), "utf8");
const OUTCOME_TABLE = readFileSync(join(ROOT, "docs", "outcomes.md"), "utf8");
/** The README and every page of docs/, by path. */
const DOCS: ReadonlyArray<readonly [string, string]> = [
  ["README.md", README],
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => [`docs/${f}`, readFileSync(join(ROOT, "docs", f), "utf8")] as const),
];
const isOutcome = (w: string): w is Outcome => (OUTCOMES as readonly string[]).includes(w);

/** The text of a `## ` section of the README (up to the next `## `). */
function section(title: string): string {
  const at = README.indexOf(`\n## ${title}\n`);
  if (at < 0) throw new Error(`README.md has no section "## ${title}"`);
  const end = README.indexOf("\n## ", at + 1);
  return README.slice(at, end < 0 ? undefined : end);
}

/** `image-refresh <synopsis>  <what it does>` lines, whitespace normalised. */
const commandLines = (text: string) =>
  [...text.matchAll(/^\s*image-refresh (\S.*?)\s{2,}(\S.*)$/gm)].map((m) => ({
    synopsis: m[1] as string,
    does: (m[2] as string).replace(/\s+/g, " "),
  }));
const flags = (text: string) => [...text.matchAll(/^\s*(?:-h, )?(--[a-z-]+)/gm)].map((m) => m[1]).sort();
const commandOf = (synopsis: string) => (synopsis === "[tick]" ? "tick" : (synopsis.split(" ")[0] as string));

describe("the README's command list is image-refresh --help's", () => {
  const block = /```\n([\s\S]*?)```/.exec(section("Command line"))?.[1] ?? "";

  test("--help lists every command the parser knows", () => {
    expect(
      commandLines(HELP)
        .map((c) => commandOf(c.synopsis))
        .sort(),
    ).toEqual([...COMMANDS].sort());
  });

  test("the same commands, synopses and words, in the same order", () => {
    expect(commandLines(block)).toEqual(commandLines(HELP));
  });

  test("the same flags", () => {
    expect(flags(block)).toEqual(flags(HELP.slice(HELP.indexOf("Flags:"))));
  });

  test("every `image-refresh <command> ARGS` the README and docs/ write has --help's arguments", () => {
    const synopsis = new Map(commandLines(HELP).map((c) => [commandOf(c.synopsis), c.synopsis]));
    for (const [doc, text] of DOCS)
      for (const m of text.matchAll(/`image-refresh ([a-z]+)((?: \[?[A-Z]+(?:\.\.\.)?\]?)+)`/g)) {
        const [, command = "", args = ""] = m;
        expect({ doc, written: `${command}${args}` }).toEqual({ doc, written: synopsis.get(command) ?? "?" });
      }
  });
});

describe("exit codes: lib/outcomes.ts, docs/outcomes.md's table, --help and the docs agree", () => {
  const table = [...OUTCOME_TABLE.matchAll(/^\| (`[a-z_]+`|—) \| .* \| (\d) \|$/gm)].map((m) => ({
    outcome: (m[1] as string).replaceAll("`", ""),
    exit: Number(m[2]),
  }));

  test("docs/outcomes.md's table is the outcome table, row for row, then the usage error", () => {
    const want = [
      ...OUTCOMES.map((o) => ({ outcome: o as string, exit: exitCodeFor(o) as number })),
      { outcome: "—", exit: EXIT_USAGE },
    ];
    expect(table).toEqual(want);
    // The tests' own written-out copy (tests/support/documented-outcomes.ts) says the same.
    expect(OUTCOMES.map((o) => [o, documentedExitCode(o)])).toEqual(
      DOCUMENTED_SEVERITY.map((o) => [o, exitCodeFor(o as Outcome)]),
    );
  });

  test("--help lists each outcome under its exit code", () => {
    const line = (code: number) =>
      new RegExp(`^  ${code}  [^:\\n]*: (.*)$`, "m").exec(HELP)?.[1]?.split(", ") ?? [];
    for (const code of [0, 1] as const)
      expect({ code, outcomes: line(code) }).toEqual({
        code,
        outcomes: OUTCOMES.filter((o) => exitCodeFor(o) === code),
      });
    expect(HELP).toMatch(new RegExp(`^  ${EXIT_USAGE}  usage or configuration error`, "m"));
    // `held` is an outcome that exits 1: no prose may call exit 0 "held".
    expect(HELP).not.toMatch(/0[^\n]*\bheld\b/);
  });

  test("every `outcome`, exit N in the README and docs/ is that outcome's code", () => {
    let seen = 0;
    for (const [doc, text] of DOCS)
      for (const m of text.matchAll(/`([a-z_]+)`(?: ?\/ ?`[a-z_]+`)?,? \(?exit (\d)/g)) {
        const [, word = "", code = ""] = m;
        if (!isOutcome(word)) continue;
        seen++;
        expect({ doc, outcome: word, exit: Number(code) }).toEqual({
          doc,
          outcome: word,
          exit: exitCodeFor(word),
        });
      }
    expect(seen).toBeGreaterThan(8);
  });

  test("the runbook's 'any exit-1 outcome' lists are the exit-1 outcomes", () => {
    const lists = [...RUNBOOK.matchAll(/any exit-1 outcome: ((?:`[a-z_]+`(?:, )?)+)/g)];
    expect(lists.length).toBeGreaterThan(0);
    for (const m of lists)
      expect([...(m[1] as string).matchAll(/`([a-z_]+)`/g)].map((w) => w[1]).sort()).toEqual(
        OUTCOMES.filter((o) => exitCodeFor(o) === 1).sort(),
      );
  });

  test("every outcome the runbook's Outcome lines name exists", () => {
    const named = [...RUNBOOK.matchAll(/^\*\*Outcome\*\*: (.*)$/gm)].flatMap((m) =>
      [...(m[1] as string).matchAll(/`([a-z_]+)` \//g)].map((w) => w[1] as string),
    );
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((w) => !isOutcome(w))).toEqual([]);
  });
});

test("every alert of the rules has its section in the runbook", () => {
  const alerts = parseRules(readFileSync(RULES_PATH, "utf8")).map((r) => r.alert as string);
  const headings = new Set([...RUNBOOK.matchAll(/^### (\S+)$/gm)].map((m) => m[1]));
  expect(alerts.length).toBeGreaterThan(10);
  expect(alerts.filter((a) => !headings.has(a))).toEqual([]);
});
