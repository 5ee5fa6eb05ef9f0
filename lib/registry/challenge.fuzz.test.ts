// Fuzzing what registries send back: any WWW-Authenticate header parses without throwing (a
// registry we cannot understand is a per-image warning, never a crash), and only a full,
// lowercase sha256 digest is ever accepted for pinning.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseWwwAuthenticate } from "./challenge.ts";
import { DIGEST_RE, pinnedReference } from "./reference.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

const headerPiece = fc.oneof(
  fc.constantFrom(
    "Bearer",
    "Basic",
    "bearer",
    "realm",
    "=",
    "==",
    '"',
    "\\",
    ",",
    " ",
    "\t",
    'realm="',
    "scope=",
    "service=x",
  ),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 8 }),
);

describe("parseWwwAuthenticate fuzz", () => {
  test("odd headers never throw and always give well-formed challenges", () => {
    const header = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.array(headerPiece, { maxLength: 30 }).map((p) => p.join("")),
    );
    fc.assert(
      fc.property(header, (h) => {
        const challenges = parseWwwAuthenticate(h);
        for (const c of challenges) {
          expect(c.scheme).toBe(c.scheme.toLowerCase());
          expect(c.scheme.length).toBeGreaterThan(0);
          for (const [k, v] of Object.entries(c.params)) {
            expect(k).toBe(k.toLowerCase());
            expect(v).not.toBe("");
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  test("a realm written by any registry comes back exactly, whatever it quotes", () => {
    const realm = fc.string({ minLength: 1, maxLength: 60 });
    fc.assert(
      fc.property(realm, (r) => {
        const quoted = `"${r.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
        const [c] = parseWwwAuthenticate(`Bearer realm=${quoted},service="s"`);
        expect(c?.params.realm).toBe(r);
        expect(c?.params.service).toBe("s");
      }),
      { numRuns: RUNS },
    );
  });

  test("a huge header is parsed in linear time", () => {
    const big = `Bearer ${Array.from({ length: 20_000 }, (_, i) => `k${i}="v,${i}"`).join(",")}`;
    const started = performance.now();
    const [c] = parseWwwAuthenticate(big);
    expect(Object.keys(c?.params ?? {})).toHaveLength(20_000);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe("digest validation fuzz", () => {
  const hex = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 64, maxLength: 64 });
  test("sha256 with 64 lowercase hex digits is accepted", () => {
    fc.assert(
      fc.property(hex, (h) => {
        expect(DIGEST_RE.test(`sha256:${h}`)).toBe(true);
        expect(pinnedReference("r.io", "a/b", `sha256:${h}`)).toBe(`r.io/a/b@sha256:${h}`);
      }),
      { numRuns: RUNS },
    );
  });

  test("anything else is rejected: other algorithms, case, length, whitespace, extra text", () => {
    const bad = fc.oneof(
      fc.string({ maxLength: 80 }),
      hex.map((h) => `SHA256:${h}`),
      hex.map((h) => `sha512:${h}`),
      hex.map((h) => `sha256:${h.toUpperCase()}`).filter((s) => /[A-F]/.test(s)),
      hex.map((h) => `sha256:${h.slice(1)}`),
      hex.map((h) => `sha256:${h}0`),
      hex.map((h) => ` sha256:${h}`),
      hex.map((h) => `sha256:${h}\n`),
      hex.map((h) => `sha256:${h}@sha256:${h}`),
      fc
        .tuple(hex, fc.integer({ min: 0, max: 63 }), fc.constantFrom("g", "G", "-", " ", "é"))
        .map(([h, i, ch]) => `sha256:${h.slice(0, i)}${ch}${h.slice(i + 1)}`),
    );
    fc.assert(
      fc.property(bad, (d) => {
        fc.pre(!/^sha256:[0-9a-f]{64}$/.test(d));
        expect(DIGEST_RE.test(d)).toBe(false);
        expect(() => pinnedReference("r.io", "a/b", d)).toThrow(/not sha256/);
      }),
      { numRuns: RUNS },
    );
  });
});
