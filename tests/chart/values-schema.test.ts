// The chart's values.schema.json: generated (scripts/gen-schema.ts) from the config's one zod
// schema, current, compilable by Helm's RE2 (no lookaround), and in agreement with the config
// schema and the program's own parser on the durations whose patterns had to be rewritten.
// Helm's own verdict on it is tests/real/chart/.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { configJsonSchema } from "../../lib/commands/schema.ts";
import { ConfigError, parseConfig } from "../../lib/config.ts";
import { chartValuesSchemaText, forRe2, re2Pattern } from "../../scripts/chart-schema.ts";
import { CHART_VALUES_SCHEMA } from "../../scripts/gen-schema.ts";

const CHART = join(import.meta.dir, "..", "..", "charts", "image-refresh");
const shipped = readFileSync(CHART_VALUES_SCHEMA, "utf8");
const schema = JSON.parse(shipped);
const ajv = new Ajv2020({ allErrors: true, strict: false });
const chartValid = ajv.compile(schema);
const configValid = ajv.compile(configJsonSchema());
const defaults = Bun.YAML.parse(readFileSync(join(CHART, "values.yaml"), "utf8")) as Record<string, unknown>;

function patterns(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) patterns(n, out);
  else if (node && typeof node === "object")
    for (const [k, v] of Object.entries(node)) {
      if (k === "pattern" && typeof v === "string") out.push(v);
      else patterns(v, out);
    }
  return out;
}

function runtimeAccepts(doc: unknown): boolean {
  try {
    parseConfig(JSON.stringify(doc), {});
    return true;
  } catch (err) {
    if (err instanceof ConfigError) return false;
    throw err;
  }
}

describe("charts/image-refresh/values.schema.json", () => {
  test("is what scripts/gen-schema.ts writes (run it after changing lib/config.ts)", () => {
    expect(shipped).toBe(chartValuesSchemaText());
  });

  test("its config is the config's schema, patterns rewritten for RE2 and nothing else", () => {
    const { $schema: _s, title: _t, description: _d, ...config } = configJsonSchema();
    expect(schema.properties.config).toEqual(forRe2(config));
    expect(schema.required).toContain("config");
  });

  test("no pattern keeps a lookaround or a backreference (Helm compiles them with Go's regexp)", () => {
    const all = patterns(schema);
    expect(all.length).toBeGreaterThan(5);
    for (const p of all) expect(p).not.toMatch(/\(\?<?[=!]|\\[1-9]/);
    expect(() => re2Pattern("^(?=a)(?!b)x$")).toThrow(/lookaround RE2 cannot compile/);
  });

  test("the chart's own values.yaml is valid, and its config is one the program accepts", () => {
    expect(chartValid(defaults), JSON.stringify(chartValid.errors)).toBe(true);
    expect(runtimeAccepts(defaults.config)).toBe(true);
  });

  const durations = [
    "10m",
    "1h30m",
    "500ms",
    "10ms",
    "15s",
    "0s",
    "0h0m",
    "00m",
    "",
    "1m1m",
    "30m1h",
    "10",
    "1d",
    "2d12h",
    "0d0h",
    "1h1d",
    " 10m",
  ];
  for (const field of ["rolloutTimeout", "minimumAge"] as const)
    test(`${field}: the rewritten pattern judges every duration as the config schema and the program do`, () => {
      for (const d of durations) {
        const config = { ...(defaults.config as object), [field]: d };
        const verdict = {
          chart: chartValid({ ...defaults, config }),
          schema: configValid(config),
          program: runtimeAccepts(config),
        };
        expect({ d, ...verdict }).toEqual({
          d,
          chart: verdict.program,
          schema: verdict.program,
          program: verdict.program,
        });
      }
    });

  test("a typo in the chart's own values or in the config is refused", () => {
    expect(chartValid({ ...defaults, schedulle: "* * * * *" })).toBe(false);
    expect(
      chartValid({ ...defaults, config: { ...(defaults.config as object), maxRefreshAttempt: 3 } }),
    ).toBe(false);
    expect(chartValid({ ...defaults, activeDeadlineSeconds: 0 })).toBe(false);
  });
});
