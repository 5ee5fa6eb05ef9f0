import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { tokenUrl } from "./auth.ts";

/** What URLSearchParams's set and append make of the same realm, service and paths. */
function bySearchParams(realm: string, service: string | undefined, paths: readonly string[]): string {
  const url = new URL(realm);
  url.username = "";
  url.password = "";
  if (service) url.searchParams.set("service", service);
  for (const path of paths) url.searchParams.append("scope", `repository:${path}:pull`);
  return url.href;
}

// Every ASCII character, some beyond it, and a lone surrogate (a stored answer is JSON text).
const ALPHABET = [
  ...Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)),
  "é",
  "ü",
  "€",
  "😀",
  "\ud800",
];

const text = (maxLength: number) =>
  fc.array(fc.constantFrom(...ALPHABET), { maxLength }).map((p) => p.join(""));

describe("tokenUrl", () => {
  test("a registry's usual realm: service and one scope per repository", () => {
    expect(
      tokenUrl("https://auth.docker.io/token", "registry.docker.io", ["library/nginx", "myorg/api"]).href,
    ).toBe(
      "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fnginx%3Apull&scope=repository%3Amyorg%2Fapi%3Apull",
    );
  });

  test("writes what URLSearchParams writes, for any service and path text", () => {
    const realm = fc.constantFrom("https://r.example/token", "https://user:pw@r.example:5000/v2/token");
    const service = fc.option(text(11), { freq: 9, nil: undefined });
    fc.assert(
      fc.property(realm, service, fc.array(text(9), { maxLength: 2 }), (r, s, paths) => {
        expect(tokenUrl(r, s, paths).href).toBe(bySearchParams(r, s, paths));
      }),
      { numRuns: 3000 },
    );
  });

  test("a realm with a query of its own keeps it; its own service is replaced", () => {
    for (const realm of [
      "https://r.example/token?service=old&x=a+b",
      "https://r.example/token?x=%20y&scope=keep",
      "https://r.example/token?",
    ])
      expect(tokenUrl(realm, "new svc", ["a/b"]).href).toBe(bySearchParams(realm, "new svc", ["a/b"]));
  });

  test("no credentials from the realm reach the URL", () => {
    const url = tokenUrl("https://user:secret@r.example/token", "s", []);
    expect(url.username).toBe("");
    expect(url.password).toBe("");
    expect(url.href).not.toContain("secret");
  });
});
