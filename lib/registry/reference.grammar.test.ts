// The grammar edges of names, tags and digests, and the exact Accept header: a registry picks
// the manifest type from it, and a missing index type would record a per-platform digest.
import { describe, expect, test } from "bun:test";
import { DIGEST_RE, MANIFEST_ACCEPT, registryEndpoint, repositoryPath, TAG_RE } from "./reference.ts";

test("Accept names all four manifest types, indexes first", () => {
  expect(MANIFEST_ACCEPT).toBe(
    "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
  );
});

test("every trailing slash of an endpoint goes", () => {
  expect(registryEndpoint("docker.io", "https://mirror.example//")).toBe("https://mirror.example");
});

describe("repository names", () => {
  for (const name of ["a--b", "x/a--b", "x/a---b.c", "x/y/a__b", "x/ab-cd.ef"])
    test(`${name} is a name`, () => expect(repositoryPath("ghcr.io", name)).toBe(name));
  for (const name of ["x/a-", "x/-a", "x//a", "x/a..b", "x/A"])
    test(`${name} is not a name`, () =>
      expect(() => repositoryPath("ghcr.io", name)).toThrow(/OCI name grammar/));
});

describe("TAG_RE", () => {
  const ROWS: Array<[string, boolean]> = [
    ["stable", true],
    ["s", true],
    ["_x", true],
    ["v1.2-rc_3", true],
    ["A".repeat(128), true],
    ["A".repeat(129), false],
    [".stable", false],
    ["-stable", false],
    ["stable/", false],
    ["sta ble", false],
    ["", false],
  ];
  for (const [tag, ok] of ROWS)
    test(`${JSON.stringify(tag.slice(0, 20))}: ${ok}`, () => expect(TAG_RE.test(tag)).toBe(ok));
});

describe("DIGEST_RE", () => {
  const hex = "0123456789abcdef".repeat(4);
  const ROWS: Array<[string, boolean]> = [
    [`sha256:${hex}`, true],
    [`xsha256:${hex}`, false],
    [`sha256:${hex}0`, false],
    [`sha256:${hex.slice(1)}`, false],
    [`sha256:${hex.toUpperCase()}`, false],
  ];
  for (const [d, ok] of ROWS)
    test(`${d.slice(0, 12)}… (${d.length}): ${ok}`, () => expect(DIGEST_RE.test(d)).toBe(ok));
});
