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

/** Replaces one path of the valid document with a random JSON value: the wrong-type cases. */
const PATHS = [
  ["tag"],
  ["registry"],
  ["registry", "host"],
  ["registry", "endpoint"],
  ["registry", "insecure"],
  ["state"],
  ["state", "kind"],
  ["state", "namespace"],
  ["maxRefreshAttempts"],
  ["maxSkipTicks"],
  ["rolloutTimeout"],
  ["requestTimeout"],
  ["annotationPrefix"],
  ["images"],
  ["images", 0],
  ["images", 0, "repository"],
  ["images", 0, "key"],
  ["images", 0, "pinned"],
  ["images", 0, "targets"],
  ["images", 0, "targets", 0],
  ["images", 0, "targets", 0, "kind"],
  ["images", 0, "targets", 0, "container"],
] as const;

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
    const arb = fc.record({ path: fc.constantFrom(...PATHS), value: fc.jsonValue({ maxDepth: 3 }) });
    fc.assert(
      fc.property(arb, ({ path, value }) => {
        const text = JSON.stringify(withValue(path, value));
        try {
          parseConfig(text, {});
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          const top = String(path[0]);
          expect(err.problems.join("\n")).toContain(top);
        }
      }),
      { numRuns: RUNS },
    );
  });

  test("huge strings and deep nesting are refused cleanly", () => {
    const huge = fc.integer({ min: 10_000, max: 300_000 }).map((n) => "a".repeat(n));
    fc.assert(
      fc.property(huge, fc.constantFrom(...PATHS), (s, path) => {
        onlyConfigError(JSON.stringify(withValue(path, s)));
        onlyConfigError(`${"[".repeat(s.length % 5000)}`);
      }),
      { numRuns: 30 },
    );
  });

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
