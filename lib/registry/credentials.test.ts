import { describe, expect, test } from "bun:test";
import { credentialsFor, loadDockerConfig, parseDockerConfig } from "./credentials.ts";

const b64 = (s: string) => Buffer.from(s).toString("base64");
const config = (auths: Record<string, unknown>) => parseDockerConfig(JSON.stringify({ auths }));

describe("credentialsFor: Docker Hub key forms", () => {
  const keys = [
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "https://index.docker.io/v1/",
    "https://docker.io",
    "http://registry-1.docker.io/v2/",
    "index.docker.io/v1/",
  ];
  for (const key of keys) {
    for (const host of ["docker.io", "index.docker.io", "registry-1.docker.io"]) {
      test(`key ${key} serves host ${host}`, () => {
        const creds = config({ [key]: { username: "hub", password: "pw" } });
        expect(credentialsFor(creds, host)).toEqual({ username: "hub", password: "pw" });
      });
    }
  }
});

describe("credentialsFor: lookup rules", () => {
  const cases: Array<
    [string, Record<string, unknown>, string, { username: string; password: string } | undefined]
  > = [
    [
      "auth wins over username/password",
      { "ghcr.io": { auth: b64("u1:p1"), username: "u2", password: "p2" } },
      "ghcr.io",
      { username: "u1", password: "p1" },
    ],
    [
      "auth splits at the first colon",
      { "ghcr.io": { auth: b64("bot:pa:ss:word") } },
      "ghcr.io",
      { username: "bot", password: "pa:ss:word" },
    ],
    [
      "scheme is optional",
      { "https://registry.example.com:5000": { username: "a", password: "b" } },
      "registry.example.com:5000",
      { username: "a", password: "b" },
    ],
    [
      "port is part of the host",
      { "registry.example.com:5000": { username: "a", password: "b" } },
      "registry.example.com",
      undefined,
    ],
    [
      "host match is case-insensitive",
      { "GHCR.io": { username: "a", password: "b" } },
      "ghcr.io",
      { username: "a", password: "b" },
    ],
    [
      "other registries do not serve Docker Hub",
      { "ghcr.io": { username: "a", password: "b" } },
      "docker.io",
      undefined,
    ],
    [
      "Docker Hub does not serve others",
      { "docker.io": { username: "a", password: "b" } },
      "ghcr.io",
      undefined,
    ],
    ["an entry without credentials is ignored", { "ghcr.io": { email: "x@y" } }, "ghcr.io", undefined],
    [
      "an exact key wins over an alias",
      {
        "https://index.docker.io/v1/": { username: "old", password: "1" },
        "docker.io": { username: "new", password: "2" },
      },
      "docker.io",
      { username: "new", password: "2" },
    ],
  ];
  for (const [name, auths, host, want] of cases) {
    test(name, () => expect(credentialsFor(config(auths), host)).toEqual(want));
  }

  test("the legacy .dockercfg bare map is read too", () => {
    const creds = parseDockerConfig(JSON.stringify({ "quay.io": { auth: b64("q:w") } }));
    expect(credentialsFor(creds, "quay.io")).toEqual({ username: "q", password: "w" });
  });

  test("serialising the credentials shows hosts only", () => {
    const creds = config({ "ghcr.io": { username: "a", password: "hunter2" } });
    expect(JSON.stringify(creds)).toBe('{"hosts":["ghcr.io"]}');
    expect(Bun.inspect(creds)).not.toContain("hunter2");
  });
});

describe("loadDockerConfig errors name the problem, never the secret", () => {
  const SECRET = "hunter2-secret";
  const cases: Array<[string, string, RegExp]> = [
    ["not JSON", `{"auths": {"x": {"auth": ${SECRET}}}}`, /not valid JSON/],
    ["auths not a map", JSON.stringify({ auths: [SECRET] }), /auths is not valid registry credentials/],
    [
      "password not a string",
      JSON.stringify({ auths: { "ghcr.io": { username: SECRET, password: 7 } } }),
      /auths\.ghcr\.io\.password/,
    ],
    [
      "auth without a colon",
      JSON.stringify({ auths: { "ghcr.io": { auth: b64(SECRET) } } }),
      /auths\["ghcr.io"\]\.auth is not base64/,
    ],
    ["top level not an object", JSON.stringify(SECRET), /top level/],
  ];
  for (const [name, text, re] of cases) {
    test(name, () => {
      let message = "";
      try {
        loadDockerConfig("/etc/pull-secret/.dockerconfigjson", () => text);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(
        /^Cannot read registry credentials from \/etc\/pull-secret\/\.dockerconfigjson: /,
      );
      expect(message).toMatch(re);
      expect(message).not.toContain(SECRET);
      expect(message).not.toContain(b64(SECRET));
    });
  }

  test("a missing file names the path and the error code", () => {
    const readFile = () => {
      throw Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" });
    };
    expect(() => loadDockerConfig("/nope/.dockerconfigjson", readFile)).toThrow(
      "Cannot read registry credentials from /nope/.dockerconfigjson: ENOENT",
    );
  });

  test("the default reader reads a real file", async () => {
    const path = `${process.env.TMPDIR ?? "/tmp"}/registry-creds-${process.pid}.json`;
    await Bun.write(path, JSON.stringify({ auths: { "ghcr.io": { auth: b64("a:b") } } }));
    expect(credentialsFor(loadDockerConfig(path), "ghcr.io")).toEqual({ username: "a", password: "b" });
  });
});
