import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, parseConfig } from "./config.ts";
import { parseDuration } from "./duration.ts";
import { exampleConfig } from "./example-config.ts";

// With the legacy `state` set, so its validation is covered too.
const BASE = { ...exampleConfig(), state: { kind: "Deployment", namespace: "apps", name: "api" } };

function parse(tweak: (c: any) => void = () => {}, env: Record<string, string> = {}) {
  const c = structuredClone(BASE) as any;
  tweak(c);
  return parseConfig(JSON.stringify(c), env);
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig", () => {
  test("applies the documented defaults and derives keys and namespaces", () => {
    const c = parse();
    expect(c).toMatchObject({
      annotationPrefix: "image-refresh.io",
      maxRefreshAttempts: 3,
      maxSkipTicks: 8,
      maxUnresolvedTicks: 8,
      rolloutTimeoutMs: 600_000,
      requestTimeoutMs: 15_000,
      onFailure: "revert",
      reconcile: "repin",
      minimumAgeMs: 0,
      verifyForMs: 120_000,
      regressionWindowMs: 3_600_000,
      parallelism: 4,
      registry: { host: "docker.io", insecure: false },
    });
    expect(c.images.map((i) => i.key)).toEqual(["api", "node-agent"]);
    expect(c.images[0]?.targets[1]?.namespace).toBe("apps");
    expect(c.images[1]?.targets[0]?.namespace).toBe("agents");
    expect(c.images[0]?.pinned).toBe(false);
  });

  test("reads YAML as well as JSON", () => {
    const yaml = `tag: stable
registry: { host: ghcr.io }
state: { kind: StatefulSet, namespace: db, name: pg }
rolloutTimeout: 90s
images:
  - repository: org/pg
    key: postgres
    targets: [{ kind: StatefulSet, name: pg, container: pg }]
`;
    const c = parseConfig(yaml, {});
    expect(c.rolloutTimeoutMs).toBe(90_000);
    expect(c.images[0]?.key).toBe("postgres");
  });

  test("environment overrides win over the file", () => {
    const c = parse(() => {}, {
      IMAGE_TAG: "edge",
      MAX_REFRESH_ATTEMPTS: "5",
      MAX_SKIP_TICKS: "2",
      MAX_UNRESOLVED_TICKS: "4",
      ROLLOUT_TIMEOUT: "1h",
      REQUEST_TIMEOUT: "500ms",
    });
    expect(c).toMatchObject({
      tag: "edge",
      maxRefreshAttempts: 5,
      maxSkipTicks: 2,
      maxUnresolvedTicks: 4,
      rolloutTimeoutMs: 3_600_000,
      requestTimeoutMs: 500,
    });
  });

  const bad: Array<[string, (c: any) => void, Record<string, string>, string[]]> = [
    ["wrong kind", (c) => (c.images[0].targets[1].kind = "Job"), {}, ["images[0].targets[1].kind"]],
    ["missing tag", (c) => delete c.tag, {}, ["tag"]],
    ["unknown field (typo)", (c) => (c.maxRefreshAtempts = 3), {}, ["(root)"]],
    ["bad duration", (c) => (c.rolloutTimeout = "10 minutes"), {}, ["rolloutTimeout"]],
    ["zero attempts", (c) => (c.maxRefreshAttempts = 0), {}, ["maxRefreshAttempts"]],
    ["no images", (c) => (c.images = []), {}, ["images"]],
    ["no targets", (c) => (c.images[1].targets = []), {}, ["images[1].targets"]],
    ["uppercase name", (c) => (c.state.name = "API"), {}, ["state.name"]],
    ["bad env number", () => {}, { MAX_SKIP_TICKS: "many" }, ["maxSkipTicks (from env MAX_SKIP_TICKS)"]],
    ["bad env duration", () => {}, { REQUEST_TIMEOUT: "15" }, ["requestTimeout (from env REQUEST_TIMEOUT)"]],
    ["duplicate key", (c) => (c.images[1].key = "api"), {}, ["images[1].key"]],
    [
      "container claimed twice",
      (c) => c.images[1].targets.push({ kind: "Deployment", name: "api", container: "api" }),
      {},
      ["images[1].targets[1]"],
    ],
    ["endpoint not a URL", (c) => (c.registry.endpoint = "registry.local"), {}, ["registry.endpoint"]],
  ];
  for (const [label, tweak, env, paths] of bad) {
    test(`rejects ${label}, naming ${paths.join(", ")}`, () => {
      const problems = problemsOf(() => parse(tweak, env));
      for (const p of paths)
        expect(problems.some((line) => line.startsWith(`${p}:`) || line.startsWith(`${p} `))).toBe(true);
    });
  }

  test("a field error does not hide an error across fields", () => {
    const problems = problemsOf(() =>
      parse((c) => {
        c.state.kind = "Job";
        c.images[1].key = "api";
      }),
    );
    expect(problems).toEqual([
      'state.kind: Invalid option: expected one of "Deployment"|"DaemonSet"|"StatefulSet"',
      'images[1].key: "api" is already used by images[0]',
    ]);
  });

  test("a bad part is named once: the checks across fields skip what they cannot read", () => {
    expect(problemsOf(() => parse((c) => (c.registry.host = "bad host")))).toEqual([
      "registry.host: must be a registry host such as docker.io",
    ]);
    expect(problemsOf(() => parse((c) => (c.annotationPrefix = "Bad_Prefix")))).toEqual([
      "annotationPrefix: must be a DNS subdomain",
    ]);
    // `state` is legacy and optional; without it and without a default namespace, a target's is missing.
    expect(problemsOf(() => parse((c) => (delete c.state, delete c.namespace, delete c.store)))).toEqual([
      "images[0].targets[0].namespace: not set, and there is no default (set namespace at the top, or store.namespace)",
      "images[0].targets[1].namespace: not set, and there is no default (set namespace at the top, or store.namespace)",
    ]);
  });

  test("reports every bad field at once", () => {
    const problems = problemsOf(() =>
      parse((c) => {
        c.state.kind = "Pod";
        c.images[0].targets[0].container = "";
        c.maxSkipTicks = -1;
      }),
    );
    expect(problems.length).toBe(3);
  });

  test("parallelism: a whole number of groups, at least 1; anything else says what it must be", () => {
    expect(parse((c) => (c.parallelism = 1)).parallelism).toBe(1);
    const rule =
      "parallelism: must be a whole number of image groups rolling out at once, at least 1 (1: one workload at a time)";
    for (const bad of [0, -2, 1.5, "4"])
      expect(problemsOf(() => parse((c) => (c.parallelism = bad)))).toEqual([
        `${rule}: ${JSON.stringify(bad)}`,
      ]);
    expect(problemsOf(() => parse((c) => (c.parallelism = 1001)))).toEqual([
      "parallelism: must be at most 1000",
    ]);
  });

  test("a file that is not a mapping or not YAML is a ConfigError", () => {
    expect(() => parseConfig("- a\n- b\n", {})).toThrow(/must be a mapping/);
    expect(() => parseConfig("a: [unclosed", {})).toThrow(ConfigError);
  });
});

describe("loadConfig", () => {
  test("flag, then IMAGE_REFRESH_CONFIG, then the default path", () => {
    const seen: string[] = [];
    const read = (p: string) => {
      seen.push(p);
      return JSON.stringify(BASE);
    };
    loadConfig("/a.yaml", { IMAGE_REFRESH_CONFIG: "/b.yaml" }, read);
    loadConfig(undefined, { IMAGE_REFRESH_CONFIG: "/b.yaml" }, read);
    loadConfig(undefined, {}, read);
    expect(seen).toEqual(["/a.yaml", "/b.yaml", "/etc/image-refresh/config.yaml"]);
  });
  test("a missing file names the path", () => {
    const read = () => {
      throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    };
    expect(() => loadConfig("/nope.yaml", {}, read)).toThrow("Cannot read config /nope.yaml: no such file");
  });
});

describe("parseDuration", () => {
  const cases: Array<[string, number | undefined]> = [
    ["500ms", 500],
    ["15s", 15_000],
    ["10m", 600_000],
    ["1h", 3_600_000],
    ["10", undefined],
    ["1.5s", undefined],
    ["-1s", undefined],
    ["1d", 86_400_000],
    ["1w", undefined],
  ];
  for (const [text, ms] of cases) test(text, () => expect(parseDuration(text)).toBe(ms));
});
