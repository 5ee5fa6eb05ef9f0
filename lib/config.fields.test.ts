// Field-by-field edges of the configuration grammar: each row is one value that must be
// accepted or refused, with the message the user sees. Anchors and repetition in the patterns
// are where a typo would let `apps_` or `.stable` through to the API server.
// biome-ignore-all lint/suspicious/noExplicitAny: documents made wrong on purpose are free-form JSON
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, parseConfig } from "./config.ts";

const BASE = {
  tag: "stable",
  registry: { host: "docker.io" },
  state: { kind: "Deployment", namespace: "apps", name: "api" },
  images: [{ repository: "myorg/api", targets: [{ kind: "Deployment", name: "api", container: "api" }] }],
};

function parse(tweak: (c: any) => void, env: Record<string, string> = {}) {
  const c = structuredClone(BASE) as any;
  tweak(c);
  return parseConfig(JSON.stringify(c), env);
}
function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

type Row = [string, (c: any) => void, string | undefined];
const set =
  (path: string, v: unknown) =>
  (c: any): void => {
    const keys = path.split(".");
    let at = c;
    for (const k of keys.slice(0, -1)) at = at[k];
    at[keys[keys.length - 1] as string] = v;
  };
const ROWS: Row[] = [
  ["namespace of one letter", set("state.namespace", "a"), undefined],
  [
    "namespace with a leading underscore",
    set("state.namespace", "_apps"),
    "state.namespace: must be a lowercase DNS-1123 label",
  ],
  [
    "namespace with a trailing underscore",
    set("state.namespace", "apps_"),
    "state.namespace: must be a lowercase DNS-1123 label",
  ],
  ["name of one letter", set("state.name", "a"), undefined],
  ["dotted name with one-letter labels", set("state.name", "a.b.c"), undefined],
  [
    "name with a leading underscore",
    set("state.name", "_api"),
    "state.name: must be a lowercase DNS-1123 name",
  ],
  [
    "name with a trailing underscore",
    set("state.name", "api_"),
    "state.name: must be a lowercase DNS-1123 name",
  ],
  ["name with a label starting with '-'", set("state.name", "a.-b"), "state.name: must be"],
  ["name with a label ending in '.'", set("state.name", "a.b."), "state.name: must be"],
  ["name with a label of '_'", set("state.name", "a._b"), "state.name: must be"],
  ["name with a label ending in '_'", set("state.name", "a.b_"), "state.name: must be"],
  ["name with '-' inside a later label", set("state.name", "a.b-c"), undefined],
  ["name with a bad middle of a later label", set("state.name", "a.b_c"), "state.name: must be"],
  ["tag starting with '.'", set("tag", ".stable"), "tag: must be a valid image tag"],
  ["tag with a trailing '/'", set("tag", "stable/"), "tag: must be a valid image tag"],
  ["repository with '--'", set("images.0.repository", "my--org/api"), undefined],
  [
    "repository with a leading '_'",
    set("images.0.repository", "_myorg/api"),
    "images[0].repository: must be a repository path such as myorg/api",
  ],
  [
    "repository with a trailing '_'",
    set("images.0.repository", "myorg/api_"),
    "images[0].repository: must be",
  ],
  [
    "repository with a tag",
    set("images.0.repository", "myorg/web:stable"),
    `images[0].repository: must be a repository path such as myorg/api, without a tag: drop ":stable" (the tag followed is the image's own tag, else the top-level tag)`,
  ],
  [
    "repository with a digest",
    set("images.0.repository", `myorg/web@sha256:${"a".repeat(64)}`),
    `images[0].repository: must be a repository path such as myorg/api, without a digest: drop "@sha256:${"a".repeat(64)}"`,
  ],
  ["repository with '..'", set("images.0.repository", "myorg/a..b"), "images[0].repository: must be"],
  [
    "repository component ending in '.'",
    set("images.0.repository", "my.org./api"),
    "images[0].repository: must be",
  ],
  ["repository with '--' in a later component", set("images.0.repository", "myorg/a--b"), undefined],
  ["repository with a one-letter component after '-'", set("images.0.repository", "myorg/a-b"), undefined],
  ["repository of one component", set("images.0.repository", "nginx"), undefined],
  ["repository of three components", set("images.0.repository", "team/sub/app"), undefined],
  ["key of one letter", set("images.0.key", "a"), undefined],
  [
    "key with a leading '-'",
    set("images.0.key", "-a"),
    "images[0].key: must be at most 32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit",
  ],
  ["key with a trailing '-'", set("images.0.key", "a-"), "images[0].key: must be at most 32"],
  ["key of 32 characters", set("images.0.key", "k".repeat(32)), undefined],
  ["key of 33 characters", set("images.0.key", "k".repeat(33)), "images[0].key: must be at most 32"],
  ["key with an uppercase letter", set("images.0.key", "Api"), "images[0].key: must be at most 32"],
  ["key with '_'", set("images.0.key", "my_api"), "images[0].key: must be at most 32"],
  [
    "a default key with '_'",
    set("images.0.repository", "myorg/my_api"),
    'images[0].key: the default key "my_api" (the repository\'s last segment) must be at most 32',
  ],
  [
    "a default key with '_' and a key set",
    (c) => Object.assign(c.images[0], { repository: "myorg/my_api", key: "my-api" }),
    undefined,
  ],
  ["maxUnresolvedTicks of 1", set("maxUnresolvedTicks", 1), undefined],
  [
    "maxUnresolvedTicks of 0",
    set("maxUnresolvedTicks", 0),
    "maxUnresolvedTicks: Too small: expected number to be >=1",
  ],
  ["onFailure keep", set("onFailure", "keep"), undefined],
  [
    "onFailure rollback",
    set("onFailure", "rollback"),
    'onFailure: Invalid option: expected one of "revert"|"keep"',
  ],
  ["reconcile report", set("reconcile", "report"), undefined],
  [
    "reconcile ignore",
    set("reconcile", "ignore"),
    'reconcile: Invalid option: expected one of "repin"|"report"',
  ],
  ["minimumAge of 0s", set("minimumAge", "0s"), undefined],
  ["minimumAge of 1h30m", set("minimumAge", "1h30m"), undefined],
  ["minimumAge of 1d (days)", set("minimumAge", "1d"), undefined],
  ["minimumAge of 2d12h", set("minimumAge", "2d12h"), undefined],
  [
    "minimumAge of 1h1d (largest unit first)",
    set("minimumAge", "1h1d"),
    'minimumAge: not a duration: "1h1d"',
  ],
  [
    "minimumAge of 30",
    set("minimumAge", 30),
    "minimumAge: Invalid input: expected string, received number; durations are strings such as 10m",
  ],
  [
    "a duration as a number",
    set("rolloutTimeout", 10),
    "rolloutTimeout: Invalid input: expected string, received number; durations are strings such as 10m",
  ],
  ["a duration sum", set("rolloutTimeout", "1h30m"), undefined],
  [
    "a duration sum in the wrong order",
    set("rolloutTimeout", "30m1h"),
    'rolloutTimeout: not a duration: "30m1h"',
  ],
  [
    "host with a leading space",
    set("registry.host", " docker.io"),
    "registry.host: must be a registry host such as docker.io",
  ],
  ["host with a path", set("registry.host", "docker.io/x"), "registry.host: must be a registry host"],
  [
    "http endpoint without insecure",
    set("registry.endpoint", "http://r.example"),
    "registry.endpoint: is plain http; set registry.insecure: true to allow it",
  ],
  [
    "http endpoint with insecure",
    (c) => Object.assign(c.registry, { endpoint: "http://r.example", insecure: true }),
    undefined,
  ],
  [
    "a repository that repeats the host",
    (c) => {
      c.registry = { host: "reg.example.com" };
      c.images[0].repository = "reg.example.com/myorg/api";
    },
    'images[0].repository: "reg.example.com/myorg/api" repeats the registry host; write the host in registry.host only',
  ],
  [
    "a Docker Hub alias as the first component under docker.io",
    set("images.0.repository", "index.docker.io/myorg/api"),
    'images[0].repository: "index.docker.io/myorg/api" repeats the registry host',
  ],
  ["https endpoint", set("registry.endpoint", "https://registry-1.docker.io"), undefined],
  [
    "an endpoint with a user and password",
    set("registry.endpoint", "https://robot:pw@r.example"),
    "registry.endpoint: must not contain a user name or password; put them in dockerConfigJson",
  ],
  [
    "a token realm with a user and password",
    set("registry.token", { realm: "https://robot:pw@auth.example/token" }),
    "registry.token.realm: must not contain a user name or password; put them in dockerConfigJson",
  ],
  ["container of 63 characters", set("images.0.targets.0.container", "c".repeat(63)), undefined],
  [
    "container of 64 characters",
    set("images.0.targets.0.container", "c".repeat(64)),
    "images[0].targets[0].container: Too big: expected string to have <=63 characters",
  ],
  ["host of 253 characters with a port", set("registry.host", `${"h".repeat(253)}:5000`), undefined],
  [
    "host of 254 characters",
    set("registry.host", "h".repeat(254)),
    "registry.host: must be a registry host such as docker.io",
  ],
  [
    "container with an underscore",
    set("images.0.targets.0.container", "api_1"),
    "images[0].targets[0].container: must be a lowercase DNS-1123 label",
  ],
  ["ftp endpoint", set("registry.endpoint", "ftp://r.example"), "registry.endpoint"],
  ["xhttps endpoint", set("registry.endpoint", "xhttps://r.example"), "registry.endpoint"],
  ["httpsx endpoint", set("registry.endpoint", "httpsx://r.example"), "registry.endpoint"],
  ["dockerConfigJson path", set("registry.dockerConfigJson", "/etc/pull/.dockerconfigjson"), undefined],
  [
    "a token endpoint",
    set("registry.token", { realm: "https://auth.docker.io/token", service: "registry.docker.io" }),
    undefined,
  ],
  [
    "a token endpoint without a service",
    set("registry.token", { realm: "https://r.example/token" }),
    undefined,
  ],
  [
    "a token endpoint that is not a URL",
    set("registry.token", { realm: "auth.docker.io" }),
    "registry.token.realm: Invalid URL",
  ],
  [
    "a token endpoint without a realm",
    set("registry.token", { service: "x" }),
    "registry.token.realm: Invalid input",
  ],
  [
    "a token endpoint with a typo",
    set("registry.token", { realm: "https://r/t", servce: "x" }),
    'registry.token: Unrecognized key: "servce"',
  ],
  [
    "a plain-http token endpoint",
    set("registry.token", { realm: "http://r.example/token" }),
    "registry.token.realm: is plain http; set registry.insecure: true to allow it",
  ],
  [
    "a plain-http token endpoint with insecure",
    (c) => Object.assign(c.registry, { insecure: true, token: { realm: "http://r.example/token" } }),
    undefined,
  ],
  ["empty dockerConfigJson", set("registry.dockerConfigJson", ""), "registry.dockerConfigJson"],
  ["a short annotation prefix", set("annotationPrefix", "tracebloc.io"), undefined],
  [
    "annotation prefix with '_'",
    set("annotationPrefix", "trace_bloc.io"),
    "annotationPrefix: must be a DNS subdomain",
  ],
  [
    "a zero duration",
    set("rolloutTimeout", "0s"),
    'rolloutTimeout: must be a positive duration: "0s" is zero',
  ],
  [
    "a zero sum",
    set("requestTimeout", "0d0h"),
    'requestTimeout: must be a positive duration: "0d0h" is zero',
  ],
  ["a rolloutTimeout of 1d", set("rolloutTimeout", "1d"), undefined],
  ["a duration without a unit", set("requestTimeout", "15"), 'requestTimeout: not a duration: "15"'],
  // A key derived from the repository obeys the key rule too (32 characters at most).
  ["a default key of 32 characters", set("images.0.repository", `myorg/${"k".repeat(32)}`), undefined],
  [
    "a default key of 33 characters",
    set("images.0.repository", `myorg/${"k".repeat(33)}`),
    `images[0].key: the default key "${"k".repeat(33)}" (the repository's last segment) must be at most 32`,
  ],
];

describe("config fields", () => {
  for (const [label, tweak, want] of ROWS)
    test(`${label}: ${want === undefined ? "accepted" : "refused"}`, () => {
      const got = problems(() => parse(tweak));
      if (want === undefined) expect(got).toEqual([]);
      else expect(got.some((p) => p.startsWith(want))).toBe(true);
    });
});

describe("config errors", () => {
  test("the message lists every problem under the source; the name is ConfigError", () => {
    try {
      parse((c) => {
        c.tag = ".x";
        c.state.namespace = "_";
      });
      throw new Error("expected a ConfigError");
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const e = err as ConfigError;
      expect(e.name).toBe("ConfigError");
      expect(e.message).toBe(
        "Invalid configuration in config:\n  - tag: must be a valid image tag\n  - state.namespace: must be a lowercase DNS-1123 label",
      );
    }
  });

  test("a ConfigError without problems is its message alone", () => {
    const e = new ConfigError("Cannot read config x");
    expect(e.problems).toEqual([]);
    expect(e.message).toBe("Cannot read config x");
  });

  test("cross-field problems come under the source too", () => {
    const text = JSON.stringify({ ...BASE, images: [BASE.images[0], BASE.images[0]] });
    expect(() => parseConfig(text, {}, "/etc/c.yaml")).toThrow(
      'Invalid configuration in /etc/c.yaml:\n  - images[1].key: "api" is already used by images[0]',
    );
  });

  const NOT_A_MAPPING: Array<[string, string]> = [
    ["null", "Cannot use config: it must be a mapping of settings"],
    ["42", "Cannot use config: it must be a mapping of settings"],
    ["[1, 2]", "Cannot use config: it must be a mapping of settings"],
    ["a: [", "Cannot parse config: "],
  ];
  for (const [text, want] of NOT_A_MAPPING)
    test(`${JSON.stringify(text)} is refused`, () => {
      expect(() => parseConfig(text, {})).toThrow(ConfigError);
      expect(() => parseConfig(text, {})).toThrow(want);
    });

  test("an unreadable file that is not missing names the reason", () => {
    const readFile = () => {
      throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
    };
    expect(() => loadConfig("/etc/c.yaml", {}, readFile)).toThrow(
      "Cannot read config /etc/c.yaml: EACCES: permission denied",
    );
  });
});

describe("environment overrides", () => {
  const ROWS: Array<[Record<string, string>, string, unknown]> = [
    [{ MAX_REFRESH_ATTEMPTS: "55" }, "maxRefreshAttempts", 55],
    [{ MAX_SKIP_TICKS: "12" }, "maxSkipTicks", 12],
    [{ IMAGE_TAG: "" }, "tag", "stable"],
    [{ IMAGE_TAG: "edge" }, "tag", "edge"],
  ];
  for (const [env, field, want] of ROWS)
    test(`${JSON.stringify(env)} gives ${field} = ${want}`, () =>
      expect((parse(() => {}, env) as any)[field]).toBe(want));

  for (const v of ["x5", "5x", "5 "])
    test(`MAX_REFRESH_ATTEMPTS=${JSON.stringify(v)} is refused, naming the variable`, () => {
      const got = problems(() => parse(() => {}, { MAX_REFRESH_ATTEMPTS: v }));
      expect(got).toHaveLength(1);
      expect(got[0]).toStartWith("maxRefreshAttempts (from env MAX_REFRESH_ATTEMPTS): ");
      // passed on as text, not as a number that is not one (NaN)
      expect(got[0]).toEndWith("expected number, received string");
    });
});

describe("YAML mistakes", () => {
  const YAML = `tag: stable
registry: { host: docker.io }
state: { kind: Deployment, namespace: apps, name: api }
images:
  - repository: myorg/api
    targets:
      - { kind: Deployment, name: api, container: api }
`;
  test("images: given twice is an error naming it, not the last one winning", () => {
    const text = `${YAML}images:\n  - repository: myorg/other\n    targets: [{ kind: Deployment, name: o, container: o }]\n`;
    expect(problems(() => parseConfig(text, {}))).toEqual([
      "images: given twice (line 4, column 1 and line 8, column 1)",
    ]);
  });
  test("name: given twice in one target names the target", () => {
    const text = YAML.replace("name: api, container", "name: api, name: web, container");
    expect(problems(() => parseConfig(text, {}))).toEqual([
      "images[0].targets[0].name: given twice (line 7, column 29 and line 7, column 40)",
    ]);
  });
  test("a syntax error gives line and column", () => {
    expect(() => parseConfig(YAML.replace("name: api }", "name: api"), {}, "/etc/c.yaml")).toThrow(
      /^Cannot parse \/etc\/c\.yaml: line \d+, column \d+: /,
    );
  });
});
