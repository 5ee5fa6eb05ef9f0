import { describe, expect, test } from "bun:test";
import { seeded } from "../tests/support/seeded.ts";
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
  const rand = seeded(11);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)] as T;

  test("encodes as Buffer does, for any text", () => {
    for (let i = 0; i < 2000; i++) {
      const text = Array.from({ length: Math.floor(rand() * 8) }, () =>
        rand() < 0.5 ? pick(PIECES) : String.fromCharCode(Math.floor(rand() * 0x3000)),
      ).join("");
      expect(encodeBase64Utf8(text)).toBe(Buffer.from(text, "utf8").toString("base64"));
    }
  });

  test("decodes as Buffer does: any bytes, valid and lenient base64 alike", () => {
    for (let i = 0; i < 3000; i++) {
      const bytes = Uint8Array.from({ length: Math.floor(rand() * 24) }, () => Math.floor(rand() * 256));
      let data = Buffer.from(bytes).toString("base64");
      // Some inputs as people and tools write them: line breaks, no padding, stray characters.
      const edit = rand();
      if (edit < 0.2) data = data.replace(/=+$/, "");
      else if (edit < 0.4) data = data.replace(/(.{4})/g, "$1\n");
      else if (edit < 0.6) {
        const at = Math.floor(rand() * (data.length + 1));
        data = data.slice(0, at) + pick(NOISE) + data.slice(at);
      } else if (edit < 0.7)
        data = Array.from({ length: Math.floor(rand() * 12) }, () => pick([...B64])).join("");
      expect(decodeBase64Utf8(data)).toBe(Buffer.from(data, "base64").toString("utf8"));
    }
  });

  test("a PEM with a byte-order mark keeps it, as Buffer does", () => {
    const pem = "\ufeff-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    expect(decodeBase64Utf8(Buffer.from(pem).toString("base64"))).toBe(pem);
  });
});
