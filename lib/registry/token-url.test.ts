import { describe, expect, test } from "bun:test";
import { seeded } from "../../tests/support/seeded.ts";
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

function randomText(rand: () => number, max: number): string {
  const n = Math.floor(rand() * max);
  return Array.from({ length: n }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]).join("");
}

describe("tokenUrl", () => {
  test("a registry's usual realm: service and one scope per repository", () => {
    expect(
      tokenUrl("https://auth.docker.io/token", "registry.docker.io", ["library/nginx", "myorg/api"]).href,
    ).toBe(
      "https://auth.docker.io/token?service=registry.docker.io&scope=repository%3Alibrary%2Fnginx%3Apull&scope=repository%3Amyorg%2Fapi%3Apull",
    );
  });

  test("writes what URLSearchParams writes, for any service and path text", () => {
    const rand = seeded(7);
    for (let i = 0; i < 3000; i++) {
      const service = rand() < 0.1 ? undefined : randomText(rand, 12);
      const paths = Array.from({ length: Math.floor(rand() * 3) }, () => randomText(rand, 10));
      const realm = rand() < 0.5 ? "https://r.example/token" : "https://user:pw@r.example:5000/v2/token";
      expect(tokenUrl(realm, service, paths).href).toBe(bySearchParams(realm, service, paths));
    }
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
