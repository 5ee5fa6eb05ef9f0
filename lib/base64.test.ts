import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeBase64Utf8, encodeBase64Utf8 } from "./base64.ts";

const PIECES = [
  "-----BEGIN CERTIFICATE-----\n",
  "\ufeff",
  "é",
  "€",
  "😀",
  "\ud800",
  "\0",
  "user:pa:ss",
  "\r\n",
];
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
const NOISE = [" ", "\n", "\t", "-", "_", "$", ".", "=", "%"];

describe("base64 without Buffer", () => {
  const char = fc.integer({ min: 0, max: 0x2fff }).map((c) => String.fromCharCode(c));
  const text = fc.array(fc.oneof(fc.constantFrom(...PIECES), char), { maxLength: 7 }).map((p) => p.join(""));

  test("encodes as Buffer does, for any text", () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(encodeBase64Utf8(t)).toBe(Buffer.from(t, "utf8").toString("base64"));
      }),
      { numRuns: 2000 },
    );
  });

  // Some inputs as people and tools write them: line breaks, no padding, stray characters, or
  // base64 letters at random.
  const written = fc.oneof(
    fc.uint8Array({ maxLength: 23 }).map((b) => Buffer.from(b).toString("base64")),
    fc.uint8Array({ maxLength: 23 }).map((b) => Buffer.from(b).toString("base64").replace(/=+$/, "")),
    fc.uint8Array({ maxLength: 23 }).map((b) =>
      Buffer.from(b)
        .toString("base64")
        .replace(/(.{4})/g, "$1\n"),
    ),
    fc.tuple(fc.uint8Array({ maxLength: 23 }), fc.nat(), fc.constantFrom(...NOISE)).map(([b, at, noise]) => {
      const data = Buffer.from(b).toString("base64");
      const i = at % (data.length + 1);
      return data.slice(0, i) + noise + data.slice(i);
    }),
    fc.array(fc.constantFrom(...B64), { maxLength: 11 }).map((p) => p.join("")),
    // A byte-order mark first, as an editor may save a PEM.
    fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from([0xef, 0xbb, 0xbf, ...b]).toString("base64")),
  );

  test("decodes as Buffer does: any bytes, valid and lenient base64 alike", () => {
    fc.assert(
      fc.property(written, (data) => {
        expect(decodeBase64Utf8(data)).toBe(Buffer.from(data, "base64").toString("utf8"));
      }),
      { numRuns: 3000 },
    );
  });

  test("a PEM with a byte-order mark keeps it, as Buffer does", () => {
    const pem = "\ufeff-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    expect(decodeBase64Utf8(Buffer.from(pem).toString("base64"))).toBe(pem);
  });
});
