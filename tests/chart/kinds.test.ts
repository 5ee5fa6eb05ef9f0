// The chart's kind -> group and resource map is generated from the product's kind table
// (lib/workload.ts) by scripts/gen-chart-kinds.ts: the committed copy is what the script writes,
// and no template spells a kind's resource or group anywhere else, so a new kind is one row.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { WORKLOAD_KIND_TABLE } from "../../lib/workload.ts";
import { HELPERS, kindsBlock, withKinds } from "../../scripts/gen-chart-kinds.ts";

const TEMPLATES = join(HELPERS, "..");

test("the chart's copy of the kind table is what scripts/gen-chart-kinds.ts writes (run it after changing the table)", () => {
  const helpers = readFileSync(HELPERS, "utf8");
  expect(helpers).toBe(withKinds(helpers));
  expect(helpers).toContain(kindsBlock());
});

test("outside the generated block no template names a kind's resource or group", () => {
  const spelled = Object.values(WORKLOAD_KIND_TABLE).flatMap((r) => [r.plural, `"${r.group}"`]);
  const found = readdirSync(TEMPLATES).flatMap((f) => {
    const text = readFileSync(join(TEMPLATES, f), "utf8").replace(kindsBlock(), "");
    return [...new Set(spelled)].filter((s) => text.includes(s)).map((s) => `${f}: ${s}`);
  });
  expect(found).toEqual([]);
});

test("the block is written anew between its markers, and refused without them", () => {
  const stale = kindsBlock().replace('"deployments"', '"deploys"');
  expect(stale).not.toBe(kindsBlock());
  expect(withKinds(`a\n${stale}\nb`)).toBe(`a\n${kindsBlock()}\nb`);
  expect(() => withKinds("no markers")).toThrow(/needs the lines/);
});
