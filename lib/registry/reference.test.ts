import { describe, expect, test } from "bun:test";
import { pinnedReference, registryEndpoint, repositoryPath } from "./reference.ts";

const DIGEST = `sha256:${"a1".repeat(32)}`;

describe("registryEndpoint", () => {
  const cases: Array<[string, string | undefined, string]> = [
    ["docker.io", undefined, "https://registry-1.docker.io"],
    ["index.docker.io", undefined, "https://registry-1.docker.io"],
    ["Docker.IO", undefined, "https://registry-1.docker.io"],
    ["ghcr.io", undefined, "https://ghcr.io"],
    ["registry.example.com:5000", undefined, "https://registry.example.com:5000"],
    ["docker.io", "https://mirror.example.com/", "https://mirror.example.com"],
    ["localhost:5000", "http://localhost:5000", "http://localhost:5000"],
  ];
  for (const [host, endpoint, want] of cases) {
    test(`${host} ${endpoint ?? ""}`, () => expect(registryEndpoint(host, endpoint)).toBe(want));
  }
});

describe("repositoryPath", () => {
  const cases: Array<[string, string, string]> = [
    ["docker.io", "nginx", "library/nginx"],
    ["index.docker.io", "nginx", "library/nginx"],
    ["docker.io", "myorg/api", "myorg/api"],
    ["docker.io", "library/nginx", "library/nginx"],
    ["ghcr.io", "nginx", "nginx"],
    ["ghcr.io", "owner/team/app", "owner/team/app"],
    ["registry.example.com:5000", "a.b/c__d/e-f", "a.b/c__d/e-f"],
  ];
  for (const [host, repo, want] of cases) {
    test(`${host} + ${repo}`, () => expect(repositoryPath(host, repo)).toBe(want));
  }
  const bad: Array<[string, string, RegExp]> = [
    ["docker.io", "MyOrg/api", /OCI name grammar/],
    ["docker.io", "a//b", /OCI name grammar/],
    ["docker.io", "-a", /OCI name grammar/],
    ["docker.io", "a/", /OCI name grammar/],
    ["docker.io", "nginx:latest", /OCI name grammar/],
    ["docker.io", "docker.io/nginx", /repeats the registry host/],
    ["docker.io", "index.docker.io/nginx", /repeats the registry host/],
    ["ghcr.io", "ghcr.io/owner/app", /repeats the registry host/],
  ];
  for (const [host, repo, re] of bad) {
    test(`rejects ${host} + ${repo}`, () => expect(() => repositoryPath(host, repo)).toThrow(re));
  }
});

describe("pinnedReference", () => {
  test("keeps the configured host and repository as written", () => {
    expect(pinnedReference("docker.io", "nginx", DIGEST)).toBe(`docker.io/nginx@${DIGEST}`);
    expect(pinnedReference("registry.example.com:5000", "myorg/api", DIGEST)).toBe(
      `registry.example.com:5000/myorg/api@${DIGEST}`,
    );
  });
  for (const digest of [
    `sha256:${"A1".repeat(32)}`,
    "sha256:abc",
    `sha512:${"a".repeat(128)}`,
    "",
    `${DIGEST} `,
  ]) {
    test(`rejects digest ${JSON.stringify(digest.slice(0, 20))}`, () => {
      expect(() => pinnedReference("docker.io", "nginx", digest)).toThrow(/not sha256/);
    });
  }
});
