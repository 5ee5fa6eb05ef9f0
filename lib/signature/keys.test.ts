import { describe, expect, test } from "bun:test";
import { signer } from "../../tests/support/signing.ts";
import { parsePublicKeys } from "./keys.ts";

async function pemOf(params: { name: string; namedCurve?: string }): Promise<string> {
  const pair = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  return `-----BEGIN PUBLIC KEY-----\n${spki.toBase64()}\n-----END PUBLIC KEY-----\n`;
}

describe("parsePublicKeys", () => {
  test("each algorithm is recognised", async () => {
    for (const algorithm of ["ecdsa-p256", "ed25519", "rsa"] as const) {
      const s = await signer(algorithm);
      const [key] = await parsePublicKeys(s.pem, "k.pub");
      expect(key?.algorithm).toBe(algorithm);
      expect(key?.name).toBe("k.pub");
    }
  });

  test("several blocks in one file are several keys, each named", async () => {
    const text = (await signer()).pem + (await signer("ed25519")).pem;
    const keys = await parsePublicKeys(text, "keys.pem");
    expect(keys.map((k) => [k.name, k.algorithm])).toEqual([
      ["keys.pem (key 1)", "ecdsa-p256"],
      ["keys.pem (key 2)", "ed25519"],
    ]);
  });

  const refused: [string, () => Promise<string>, RegExp][] = [
    ["empty", async () => "", /k.pub holds no PEM "PUBLIC KEY" block/],
    [
      "a private key",
      async () => "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n",
      /holds a private key: give the public one/,
    ],
    [
      "not a key",
      async () => "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
      /not an ECDSA P-256, Ed25519 or RSA public key/,
    ],
    [
      "ECDSA P-384",
      () => pemOf({ name: "ECDSA", namedCurve: "P-384" }),
      /not an ECDSA P-256, Ed25519 or RSA/,
    ],
  ];
  for (const [name, text, message] of refused)
    test(`refused: ${name}`, async () => {
      await expect(parsePublicKeys(await text(), "k.pub")).rejects.toThrow(message);
    });
});
