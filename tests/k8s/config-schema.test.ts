// The shipped JSON Schema (k8s/config.schema.json) against the runtime parser: it is fresh, it is
// what `image-refresh schema` prints, and an independent validator (ajv, draft 2020-12) agrees
// with parseConfig on every shipped config and on a corpus of good and bad documents. The rules
// that span fields are the runtime's alone; the corpus names each one that JSON Schema accepts.
// biome-ignore-all lint/suspicious/noExplicitAny: documents made wrong on purpose are free-form
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { configJsonSchemaText } from "../../lib/commands/schema.ts";
import { ConfigError, parseConfig } from "../../lib/config.ts";
import { exampleConfig } from "../../lib/example-config.ts";
import { SHIPPED_SCHEMA } from "../../scripts/gen-schema.ts";
import { runBinary } from "../support/binary.ts";

const ROOT = join(import.meta.dir, "..", "..");
const shipped = readFileSync(SHIPPED_SCHEMA, "utf8");
const ajv = new Ajv2020({ allErrors: true, strict: true });
const validate = ajv.compile(JSON.parse(shipped));

function runtimeAccepts(doc: unknown): boolean {
  try {
    parseConfig(JSON.stringify(doc), {});
    return true;
  } catch (err) {
    if (err instanceof ConfigError) return false;
    throw err;
  }
}

/** Every config.yaml under k8s/, and the configuration example of docs/configuration.md. */
function shippedConfigs(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === "config.yaml") out.push([p.slice(ROOT.length + 1), readFileSync(p, "utf8")]);
    }
  };
  walk(join(ROOT, "k8s"));
  const page = readFileSync(join(ROOT, "docs", "configuration.md"), "utf8");
  const block = /```yaml\n([\s\S]*?)```/.exec(page)?.[1];
  if (block === undefined) throw new Error("docs/configuration.md has no yaml block");
  out.push(["docs/configuration.md", block]);
  return out;
}

describe("the shipped JSON Schema", () => {
  test("is what scripts/gen-schema.ts writes (run it after changing lib/config.ts)", () => {
    expect(shipped).toBe(configJsonSchemaText());
  });
  test("is what `image-refresh schema` prints, draft 2020-12", async () => {
    const r = await runBinary(["schema"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(shipped);
    expect(JSON.parse(r.stdout).$schema).toBe("https://json-schema.org/draft/2020-12/schema");
  });
});

describe("every shipped config", () => {
  const configs = shippedConfigs();
  test("there are shipped configs to check", () => expect(configs.length).toBeGreaterThanOrEqual(3));
  for (const [name, text] of configs)
    test(`${name}: valid for ajv and for the product`, () => {
      validate(Bun.YAML.parse(text));
      expect(validate.errors ?? []).toEqual([]);
      expect(() => parseConfig(text, {}, name)).not.toThrow();
    });
  for (const [name, text] of configs.filter(([n]) => n.startsWith("k8s/")))
    test(`${name}: its yaml-language-server line names the shipped schema`, () => {
      const line = /^# yaml-language-server: \$schema=(\S+)$/m.exec(text)?.[1];
      expect(line).toBeDefined();
      expect(resolve(dirname(join(ROOT, name)), line as string)).toBe(SHIPPED_SCHEMA);
    });
});

type Doc = ReturnType<typeof exampleConfig> & Record<string, any>;
const doc = (tweak: (c: any) => void): Doc => {
  const c = structuredClone(exampleConfig()) as any;
  tweak(c);
  return c;
};

// Each row: a document, and whether it is valid. Both validators must give that answer.
const AGREE: Array<[string, Doc, boolean]> = [
  ["the example", doc(() => {}), true],
  [
    "every documented field set",
    doc((c) =>
      Object.assign(c, {
        annotationPrefix: "example.com",
        maxRefreshAttempts: 5,
        maxSkipTicks: 2,
        maxUnresolvedTicks: 4,
        rolloutTimeout: "1h30m",
        requestTimeout: "500ms",
        onFailure: "keep",
        reconcile: "report",
        minimumAge: "0s",
      }),
    ),
    true,
  ],
  [
    "a registry with every field",
    doc(
      (c) =>
        (c.registry = {
          host: "r.example:5000",
          endpoint: "http://r.example:5000",
          insecure: true,
          dockerConfigJson: "/p/.dockerconfigjson",
          token: { realm: "http://r.example/token", service: "r" },
        }),
    ),
    true,
  ],
  ["an explicit key", doc((c) => (c.images[0].key = "api-2")), true],
  ["a pinned image", doc((c) => (c.images[1].pinned = true)), true],
  ["a duration sum", doc((c) => (c.minimumAge = "2m30s")), true],
  ["no tag", doc((c) => delete c.tag), false],
  ["a typo at the top", doc((c) => (c.maxRefreshAtempts = 3)), false],
  ["a typo in a target", doc((c) => (c.images[0].targets[0].contaner = "x")), false],
  ["a Job target", doc((c) => (c.images[0].targets[1].kind = "Job")), false],
  ["no images", doc((c) => (c.images = [])), false],
  ["no targets", doc((c) => (c.images[0].targets = [])), false],
  ["an uppercase name", doc((c) => (c.store = { name: "API" })), false],
  ["a namespace of 64 characters", doc((c) => (c.namespace = "n".repeat(64))), false],
  ["a key of 33 characters", doc((c) => (c.images[0].key = "k".repeat(33))), false],
  ["a key with '_'", doc((c) => (c.images[0].key = "my_api")), false],
  ["a key ending in '-'", doc((c) => (c.images[0].key = "api-")), false],
  ["zero attempts", doc((c) => (c.maxRefreshAttempts = 0)), false],
  ["1.5 attempts", doc((c) => (c.maxRefreshAttempts = 1.5)), false],
  ["attempts as text", doc((c) => (c.maxRefreshAttempts = "3")), false],
  ["a duration as a number", doc((c) => (c.rolloutTimeout = 10)), false],
  ["a duration without a unit", doc((c) => (c.requestTimeout = "15")), false],
  ["a zero rollout timeout", doc((c) => (c.rolloutTimeout = "0s")), false],
  ["a zero sum", doc((c) => (c.rolloutTimeout = "0h0m")), false],
  ["units out of order", doc((c) => (c.rolloutTimeout = "30m1h")), false],
  ["a day", doc((c) => (c.minimumAge = "1d")), true],
  ["zero days", doc((c) => (c.rolloutTimeout = "0d")), false],
  ["a week", doc((c) => (c.minimumAge = "1w")), false],
  ["an empty duration", doc((c) => (c.minimumAge = "")), false],
  ["onFailure rollback", doc((c) => (c.onFailure = "rollback")), false],
  ["reconcile ignore", doc((c) => (c.reconcile = "ignore")), false],
  ["an endpoint that is not a URL", doc((c) => (c.registry.endpoint = "registry.local")), false],
  ["an ftp endpoint", doc((c) => (c.registry.endpoint = "ftp://r.example")), false],
  ["an endpoint without slashes", doc((c) => (c.registry.endpoint = "https:r.example")), false],
  ["an endpoint with credentials", doc((c) => (c.registry.endpoint = "https://u:p@r.example")), false],
  ["a realm with a user", doc((c) => (c.registry.token = { realm: "https://u@r.example/t" })), false],
  ["a token without a realm", doc((c) => (c.registry.token = { service: "x" })), false],
  ["an empty dockerConfigJson", doc((c) => (c.registry.dockerConfigJson = "")), false],
  ["a host with a path", doc((c) => (c.registry.host = "docker.io/x")), false],
  ["pinned as text", doc((c) => (c.images[0].pinned = "true")), false],
  ["a repository with a tag", doc((c) => (c.images[0].repository = "myorg/api:1")), false],
  ["a bad tag", doc((c) => (c.tag = ".stable")), false],
];

// Valid for JSON Schema, refused by the product: the rules across fields.
const RUNTIME_ONLY: Array<[string, Doc]> = [
  ["two images with one key", doc((c) => (c.images[1].key = "api"))],
  [
    "one container targeted twice",
    doc((c) => c.images[1].targets.push({ kind: "Deployment", name: "api", container: "api" })),
  ],
  ["a default key with '_'", doc((c) => (c.images[0].repository = "myorg/my_api"))],
  ["a default key of 33 characters", doc((c) => (c.images[0].repository = `myorg/${"k".repeat(33)}`))],
  ["a plain-http endpoint without insecure", doc((c) => (c.registry.endpoint = "http://r.example"))],
  ["a plain-http realm without insecure", doc((c) => (c.registry.token = { realm: "http://r.example/t" }))],
  ["a repository that repeats the host", doc((c) => (c.images[0].repository = "docker.io/myorg/api"))],
];

describe("ajv and the runtime parser agree", () => {
  for (const [label, d, valid] of AGREE)
    test(`${label}: ${valid ? "valid" : "invalid"} for both`, () => {
      expect({ ajv: validate(d), runtime: runtimeAccepts(d) }).toEqual({ ajv: valid, runtime: valid });
    });
  for (const [label, d] of RUNTIME_ONLY)
    test(`${label}: a rule across fields, refused by the product only`, () => {
      expect({ ajv: validate(d), runtime: runtimeAccepts(d) }).toEqual({ ajv: true, runtime: false });
    });
});
