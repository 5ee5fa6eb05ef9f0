// The plan's functions take few positional parameters, with real names: a verdict step takes its
// judgement and the image's case, anything more comes in an options object, so a call reads as
// what it passes, not as a row of single letters in an order to remember. Read with the
// TypeScript compiler's own parser, so a parameter is one wherever it stands.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { type Node, SyntaxKind } from "typescript/unstable/ast";
import { API, type Project } from "typescript/unstable/async";

const ROOT = join(import.meta.dir, "..", "..");
const PLAN = "lib/tick/plan";
const MAX_POSITIONAL = 3;

interface Signature {
  file: string;
  name: string;
  params: string[];
}

let api: API;
let project: Project;

beforeAll(async () => {
  api = new API({ cwd: ROOT });
  const snapshot = await api.updateSnapshot({ openProjects: [join(ROOT, "tsconfig.json")] });
  project = snapshot.getProjects()[0] as Project;
});

afterAll(async () => {
  await api.close();
});

/** A function's name: its own, or the variable it is assigned to; undefined for a callback. */
function nameOf(node: Node): string | undefined {
  const own = (node as { name?: { text?: string } }).name?.text;
  if (own) return own;
  const parent = node.parent as { kind: SyntaxKind; name?: { text?: string } } | undefined;
  return parent?.kind === SyntaxKind.VariableDeclaration ? parent.name?.text : undefined;
}

/** Every named function of the plan's source files, with its parameters as written. */
async function planSignatures(): Promise<Signature[]> {
  const files = readdirSync(join(ROOT, PLAN)).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
  const out: Signature[] = [];
  for (const file of files) {
    const source = await project.program.getSourceFile(join(ROOT, PLAN, file));
    if (!source) throw new Error(`${PLAN}/${file} is not part of the TypeScript project`);
    const visit = (node: Node): void => {
      const params = (node as { parameters?: ArrayLike<{ name: { kind: SyntaxKind; text?: string } }> })
        .parameters;
      const name = params ? nameOf(node) : undefined;
      if (params && name)
        out.push({
          file,
          name,
          params: Array.from(params, (p) =>
            p.name.kind === SyntaxKind.Identifier ? (p.name.text ?? "") : "{…}",
          ),
        });
      node.forEachChild(visit);
    };
    visit(source as unknown as Node);
  }
  return out;
}

const shown = (s: Signature) => `${PLAN}/${s.file}: ${s.name}(${s.params.join(", ")})`;

test(`no function in ${PLAN} takes more than ${MAX_POSITIONAL} positional parameters`, async () => {
  const signatures = await planSignatures();
  const tooMany = signatures.filter((s) => s.params.length > MAX_POSITIONAL);
  expect(tooMany.map(shown)).toEqual([]);
});

test(`no named function in ${PLAN} has a one-letter parameter name`, async () => {
  const signatures = await planSignatures();
  const terse = signatures.filter((s) => s.params.some((p) => p.length === 1));
  expect(terse.map(shown)).toEqual([]);
});

test("the reader sees the plan's functions and their parameters as written", async () => {
  const signatures = await planSignatures();
  const byName = (file: string, name: string) => signatures.find((s) => s.file === file && s.name === name);
  expect(signatures.length).toBeGreaterThan(40);
  // A declaration, a destructured options object and an arrow held in a const.
  expect(byName("due.ts", "lockoutAdvice")?.params).toEqual(["key", "facts"]);
  expect(byName("regression.ts", "rollBackRejected")?.params).toEqual(["judgement", "{…}"]);
  expect(byName("judgement.ts", "say")?.params).toEqual(["judgement", "{…}"]);
  expect(byName("verdict.ts", "bookOf")?.params).toEqual(["observed", "key"]);
});
