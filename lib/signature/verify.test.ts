import { beforeAll, describe, expect, test } from "bun:test";
import {
  bytes,
  MapRegistry,
  putBundle,
  putSimpleSignature,
  type Signer,
  signer,
  simplePayload,
  tagOf,
} from "../../tests/support/signing.ts";
import type { PublicKey } from "./keys.ts";
import { BUNDLE_V03 } from "./reader.ts";
import { verifySignature } from "./verify.ts";

const A = `sha256:${"a".repeat(64)}`;
const B = `sha256:${"b".repeat(64)}`;

let ours: Signer;
let theirs: Signer;
let ed: Signer;
let rsa: Signer;
let keys: PublicKey[];
beforeAll(async () => {
  [ours, theirs, ed, rsa] = await Promise.all([signer(), signer(), signer("ed25519"), signer("rsa")]);
  keys = [await ours.publicKey("release.pub")];
});

type Case = {
  name: string;
  setup: (reg: MapRegistry) => Promise<void>;
  keys?: () => Promise<PublicKey[]>;
  status: string;
  reason?: RegExp;
};

const cases: Case[] = [
  {
    name: "simple signing by our key",
    setup: (reg) => putSimpleSignature(reg, A, ours),
    status: "verified",
    reason: /simple-signing signature verifies with release.pub/,
  },
  {
    name: "bundle through the referrers API",
    setup: (reg) => putBundle(reg, A, ours),
    status: "verified",
    reason: /^bundle/,
  },
  {
    name: "bundle through the tag fallback",
    setup: (reg) => putBundle(reg, A, ours, { fallback: true }),
    status: "verified",
    reason: /^bundle/,
  },
  { name: "nothing there", setup: async () => {}, status: "unsigned" },
  {
    name: "a bundle for another artifact type only",
    setup: async (reg) => {
      reg.put(
        `referrers/${A}?artifactType=${encodeURIComponent(BUNDLE_V03)}`,
        JSON.stringify({
          schemaVersion: 2,
          manifests: [{ artifactType: "application/spdx+json", digest: B }],
        }),
      );
    },
    status: "unsigned",
  },
  {
    name: "simple signing by another key",
    setup: (reg) => putSimpleSignature(reg, A, theirs),
    status: "signature_invalid",
    reason: /none of the configured keys/,
  },
  {
    name: "bundle by another key",
    setup: (reg) => putBundle(reg, A, theirs),
    status: "signature_invalid",
    reason: /bundle: .*none of the configured keys/,
  },
  {
    name: "simple signing copied from another digest",
    setup: (reg) => putSimpleSignature(reg, A, ours, { payload: simplePayload(B) }),
    status: "signature_invalid",
    reason: /signed for another digest \(sha256:b+\)/,
  },
  {
    name: "bundle copied from another digest",
    setup: (reg) => putBundle(reg, A, ours, { statementFor: B }),
    status: "signature_invalid",
    reason: /signed for another digest/,
  },
  {
    name: "bundle signed over the payload, not its PAE",
    setup: (reg) => putBundle(reg, A, ours, { signPae: false }),
    status: "signature_invalid",
  },
  {
    name: "payload blob tampered after upload",
    setup: async (reg) => {
      await putSimpleSignature(reg, A, ours);
      for (const [path, answer] of reg.answers)
        if (path.startsWith("blobs/") && new TextDecoder().decode(answer.body).includes("critical"))
          reg.put(path, new TextDecoder().decode(answer.body).replace("registry.example", "evil.example"));
    },
    status: "signature_invalid",
    reason: /does not hash to its digest \(tampered\)/,
  },
  {
    name: "payload rewritten with a matching descriptor: the old signature does not verify",
    setup: async (reg) => {
      const old = await ours.sign(bytes(simplePayload(B)));
      await putSimpleSignature(reg, A, ours, { signature: old.toBase64() });
    },
    status: "signature_invalid",
    reason: /none of the configured keys/,
  },
  {
    name: "signature annotation not base64",
    setup: (reg) => putSimpleSignature(reg, A, ours, { signature: "%%%" }),
    status: "signature_invalid",
    reason: /not base64/,
  },
  {
    name: "signature that is not DER",
    setup: (reg) => putSimpleSignature(reg, A, ours, { signature: bytes("xyz").toBase64() }),
    status: "signature_invalid",
  },
  {
    name: ".sig tag that is not JSON",
    setup: async (reg) => reg.put(`manifests/${tagOf(A)}.sig`, "<html>"),
    status: "signature_invalid",
    reason: /not JSON/,
  },
  {
    name: "payload blob missing",
    setup: async (reg) => {
      await putSimpleSignature(reg, A, ours);
      for (const path of [...reg.answers.keys()]) if (path.startsWith("blobs/")) reg.answers.delete(path);
    },
    status: "signature_invalid",
    reason: /missing/,
  },
  {
    name: "a bad simple signature beside a good bundle",
    setup: async (reg) => {
      await putSimpleSignature(reg, A, theirs);
      await putBundle(reg, A, ours);
    },
    status: "verified",
    reason: /^bundle/,
  },
  {
    name: "the second key verifies",
    setup: (reg) => putSimpleSignature(reg, A, theirs),
    keys: async () => [await ours.publicKey("a.pub"), await theirs.publicKey("b.pub")],
    status: "verified",
    reason: /b\.pub/,
  },
  {
    name: "Ed25519",
    setup: (reg) => putSimpleSignature(reg, A, ed),
    keys: async () => [await ed.publicKey("ed.pub")],
    status: "verified",
  },
  {
    name: "RSA bundle",
    setup: (reg) => putBundle(reg, A, rsa),
    keys: async () => [await rsa.publicKey("rsa.pub")],
    status: "verified",
  },
  {
    name: "the registry fails the .sig look-up",
    setup: async (reg) => reg.put(`manifests/${tagOf(A)}.sig`, "oops", 500),
    status: "unreadable",
    reason: /answered 500/,
  },
  {
    name: "the referrers API fails with a server error",
    setup: async (reg) => reg.put(`referrers/${A}?artifactType=${encodeURIComponent(BUNDLE_V03)}`, "", 503),
    status: "unreadable",
  },
];

describe("verifySignature", () => {
  for (const c of cases)
    test(c.name, async () => {
      const reg = new MapRegistry();
      await c.setup(reg);
      const v = await verifySignature(reg, A, c.keys ? await c.keys() : keys);
      expect(v.status).toBe(c.status as typeof v.status);
      if (c.reason) expect(v.reason).toMatch(c.reason);
    });

  test("a simple signature that verifies costs one manifest and one blob", async () => {
    const reg = new MapRegistry();
    await putSimpleSignature(reg, A, ours);
    await verifySignature(reg, A, keys);
    expect(reg.requests.map((p) => p.split("/")[0])).toEqual(["manifests", "blobs"]);
  });

  test("a referrer served under another digest than listed is not believed", async () => {
    const reg = new MapRegistry();
    await putBundle(reg, A, ours);
    for (const [path, answer] of reg.answers)
      if (path.startsWith("manifests/sha256:"))
        reg.put(
          path,
          new TextDecoder().decode(answer.body).replace('"schemaVersion":2', '"schemaVersion":2 '),
        );
    const v = await verifySignature(reg, A, keys);
    expect(v.status).toBe("signature_invalid");
    expect(v.reason).toMatch(/does not hash to its digest/);
  });
});
