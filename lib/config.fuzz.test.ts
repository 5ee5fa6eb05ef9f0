// Fuzzing the configuration boundary: whatever text a user or a broken ConfigMap hands us,
// parseConfig either returns a Config or throws ConfigError (exit 2 naming the fields). Any
// other exception would surface as a stack trace and the wrong exit code.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ConfigError, parseConfig } from "./config.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);

const VALID = {
  tag: "stable",
  registry: { host: "docker.io" },
  store: { namespace: "image-refresh", name: "image-refresh-state" },
  // Legacy, still parsed: the workload bookkeeping is migrated from.
  state: { kind: "Deployment", namespace: "apps", name: "api" },
  images: [{ repository: "myorg/api", targets: [{ kind: "Deployment", name: "api", container: "api" }] }],
};

/** Only ConfigError may escape; anything else fails the property with the input. */
function onlyConfigError(text: string, env: Record<string, string> = {}): void {
  try {
    parseConfig(text, env);
  } catch (err) {
    if (!(err instanceof ConfigError))
      throw new Error(`parseConfig threw ${String(err)} for ${text.slice(0, 200)}`);
    expect(err.message.length).toBeLessThan(20_000 + text.length);
  }
}

/** Replaces one path of the valid document with a random JSON value: the wrong-type cases.
 * Each path names the only JSON type the schema can accept there. */
type JsonType = "string" | "boolean" | "integer" | "object" | "array";
const TYPED: ReadonlyArray<readonly [readonly (string | number)[], JsonType]> = [
  [["tag"], "string"],
  [["registry"], "object"],
  [["registry", "host"], "string"],
  [["registry", "endpoint"], "string"],
  [["registry", "insecure"], "boolean"],
  [["store"], "object"],
  [["store", "namespace"], "string"],
  [["store", "name"], "string"],
  [["state"], "object"],
  [["state", "kind"], "string"],
  [["state", "namespace"], "string"],
  [["maxRefreshAttempts"], "integer"],
  [["maxSkipTicks"], "integer"],
  [["rolloutTimeout"], "string"],
  [["requestTimeout"], "string"],
  [["annotationPrefix"], "string"],
  [["images"], "array"],
  [["images", 0], "object"],
  [["images", 0, "repository"], "string"],
  [["images", 0, "key"], "string"],
  [["images", 0, "pinned"], "boolean"],
  [["images", 0, "targets"], "array"],
  [["images", 0, "targets", 0], "object"],
  [["images", 0, "targets", 0, "kind"], "string"],
  [["images", 0, "targets", 0, "container"], "string"],
];
const PATHS = TYPED.map(([path]) => path);

function jsonType(v: unknown): JsonType | "number" | "null" {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v as JsonType;
}

/** "images[0].targets[0].kind", as ConfigError problems name a field. */
function fieldName(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}

/** The text must be refused with a ConfigError, never accepted and never another exception. */
function refused(text: string): void {
  let thrown: unknown;
  try {
    parseConfig(text, {});
  } catch (err) {
    thrown = err;
  }
  if (!(thrown instanceof ConfigError))
    throw new Error(`parseConfig gave ${String(thrown ?? "a Config")} for ${text.slice(0, 200)}`);
  expect(thrown.message.length).toBeLessThan(20_000 + text.length);
}

function withValue(path: readonly (string | number)[], value: unknown): unknown {
  // biome-ignore lint/suspicious/noExplicitAny: a document being made wrong on purpose
  const doc: any = structuredClone(VALID);
  let at = doc;
  for (const p of path.slice(0, -1)) at = at[p];
  at[path[path.length - 1] as string] = value;
  return doc;
}

describe("parseConfig fuzz", () => {
  test("random text (YAML, JSON, garbage) only ever throws ConfigError", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.constantFrom(
        "---\n",
        "a: [",
        "{{",
        "!!binary x",
        "&a [*a]",
        "tag: !!js/function x",
        "- - -",
        "\t\t",
      ),
    );
    fc.assert(
      fc.property(text, (t) => onlyConfigError(t)),
      { numRuns: RUNS },
    );
  });

  test("a valid document with one field of any type: a Config or a ConfigError naming that field", () => {
    const arb = fc.record({ typed: fc.constantFrom(...TYPED), value: fc.jsonValue({ maxDepth: 3 }) });
    let wrongTyped = 0;
    fc.assert(
      fc.property(arb, ({ typed: [path, type], value }) => {
        const text = JSON.stringify(withValue(path, value));
        // A value of a JSON type the field cannot hold must be refused, naming that very field.
        const wrong = jsonType(value) !== type;
        if (wrong) wrongTyped++;
        let problems: string[] | undefined;
        try {
          parseConfig(text, {});
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          problems = err.problems;
        }
        if (problems === undefined) {
          if (wrong)
            throw new Error(`accepted ${JSON.stringify(value)} (${jsonType(value)}) for ${fieldName(path)}`);
          return;
        }
        const field = fieldName(path);
        expect(problems.some((p) => p.startsWith(field))).toBe(true);
      }),
      { numRuns: RUNS },
    );
    // The wrong-type cases are the point of this property: most runs must reach them.
    expect(wrongTyped).toBeGreaterThan(RUNS / 2);
  });

  // Every path, not a random few: a field that takes a 10k-character string must be named here.
  test("huge strings and deep nesting are refused cleanly", () => {
    const huge = fc.integer({ min: 10_000, max: 300_000 }).map((n) => "a".repeat(n));
    fc.assert(
      fc.property(huge, (s) => {
        for (const path of PATHS) refused(JSON.stringify(withValue(path, s)));
        refused(`${"[".repeat(s.length % 5000)}`);
      }),
      { numRuns: 10 },
    );
    // Ten documents per path of up to 300k characters: seconds of parsing, more on a busy machine.
  }, 30_000);

  test("environment overrides with any text only ever throw ConfigError", () => {
    const env = fc.dictionary(
      fc.constantFrom(
        "IMAGE_TAG",
        "MAX_REFRESH_ATTEMPTS",
        "MAX_SKIP_TICKS",
        "ROLLOUT_TIMEOUT",
        "REQUEST_TIMEOUT",
      ),
      fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.nat().map(String),
        fc.constantFrom("1e999", "-0", "0x10", "9".repeat(400)),
      ),
    );
    fc.assert(
      fc.property(env, (e) => onlyConfigError(JSON.stringify(VALID), e)),
      { numRuns: RUNS },
    );
  });
});
