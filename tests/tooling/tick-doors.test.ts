// The tick's rooms are reached through its front door: a command imports from `lib/tick/index.ts`
// only, never from observe, plan/ or apply/ behind it, so those rooms can be rearranged without a
// command noticing. And observe reads the world without reaching into plan/ or apply/, and apply
// takes what it needs of the reads from the decision, not from observe: the tick flows one way,
// observe → plan → apply.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** The repository paths a source file imports, static and dynamic, type-only included. */
export function importsOf(path: string, text = readFileSync(join(ROOT, path), "utf8")): string[] {
  const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)"(\.{1,2}\/[^"]+)"/gm)].map(
    (m) => m[1] as string,
  );
  return specs.map((s) => relative(ROOT, resolve(join(ROOT, dirname(path)), s)));
}

/** `file -> imported` for each import of `files` that `forbidden` says must not be. */
function offending(files: string[], forbidden: (imported: string) => boolean): string[] {
  return files.flatMap((f) => importsOf(f).flatMap((i) => (forbidden(i) ? [`${f} -> ${i}`] : [])));
}

const sources = (dir: string) =>
  readdirSync(join(ROOT, dir))
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
    .map((f) => `${dir}/${f}`);

test("commands import the tick through lib/tick/index.ts only", () => {
  const commands = sources("lib/commands");
  expect(commands.length).toBeGreaterThan(5);
  const inner = (i: string) => i.startsWith("lib/tick/") && i !== "lib/tick/index.ts";
  expect(offending(commands, inner)).toEqual([]);
});

test("observe imports nothing from plan/ or apply/", () => {
  const later = (i: string) => i.startsWith("lib/tick/plan/") || i.startsWith("lib/tick/apply/");
  expect(offending(["lib/tick/observe.ts"], later)).toEqual([]);
});

test("apply imports nothing from observe: the decision carries what it needs of the reads", () => {
  const apply = sources("lib/tick/apply");
  expect(apply.length).toBeGreaterThan(5);
  expect(offending(apply, (i) => i === "lib/tick/observe.ts")).toEqual([]);
});

test("the import reader finds static, type-only, multi-line and dynamic imports, and resolves them", () => {
  const text = [
    'import { a } from "../tick/run.ts";',
    'import type { B } from "./b.ts";',
    'import {\n  c,\n  d,\n} from "../../sim/c.ts";',
    'const e = await import("../tick/plan/e.ts");',
    'import "./side-effect.ts";',
    'import { z } from "zod";',
  ].join("\n");
  expect(importsOf("lib/commands/x.ts", text)).toEqual([
    "lib/tick/run.ts",
    "lib/commands/b.ts",
    "sim/c.ts",
    "lib/tick/plan/e.ts",
    "lib/commands/side-effect.ts",
  ]);
});
