import { beforeAll, describe, expect, test } from "bun:test";
import { signer } from "../../tests/support/signing.ts";
import { ConfigError, parseConfig } from "../config.ts";
import { exampleConfig } from "../example-config.ts";
import { loadPolicyKeys } from "./policy.ts";

let files: Record<string, string>;
beforeAll(async () => {
  files = {
    "/k/release.pub": (await signer()).pem,
    "/k/agent.pub": (await signer("ed25519")).pem,
    "/k/bad.pub": "nope",
  };
});
const readFile = (p: string) => {
  const text = files[p];
  if (text === undefined) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
  return text;
};

function config(tweak: (c: any) => void) {
  const c = structuredClone(exampleConfig()) as any;
  tweak(c);
  return parseConfig(JSON.stringify(c), {});
}

describe("the verify policy", () => {
  test("top level applies to every image; an image's own keys win; false turns it off", () => {
    const c = config((c) => {
      c.verify = { keys: ["/k/release.pub"] };
      c.images.push({
        ...c.images[0],
        key: "web",
        verify: false,
        targets: [{ kind: "Deployment", name: "web", container: "web" }],
      });
      c.images[1].verify = { keys: ["/k/agent.pub"] };
    });
    expect(c.images.map((i) => [i.key, i.verify])).toEqual([
      ["api", { keys: ["/k/release.pub"], from: "top-level" }],
      ["node-agent", { keys: ["/k/agent.pub"], from: "image" }],
      ["web", undefined],
    ]);
  });

  test("no policy: no image is verified", () => {
    expect(config(() => {}).images.every((i) => i.verify === undefined)).toBe(true);
  });

  const refused: [string, (c: any) => void, RegExp][] = [
    ["verify: true", (c) => (c.images[0].verify = true), /images\[0\]\.verify/],
    ["no keys", (c) => (c.verify = { keys: [] }), /verify\.keys/],
    ["top-level false", (c) => (c.verify = false), /verify/],
    ["an unknown field", (c) => (c.verify = { keys: ["/k"], rekor: true }), /verify/],
  ];
  for (const [name, tweak, path] of refused)
    test(`refused: ${name}`, () => {
      let problems: string[] = [];
      try {
        config(tweak);
      } catch (err) {
        problems = (err as ConfigError).problems;
      }
      expect(problems.join("\n")).toMatch(path);
    });

  test("keys are read and imported per image", async () => {
    const c = config((c) => {
      c.verify = { keys: ["/k/release.pub"] };
      c.images[1].verify = { keys: ["/k/agent.pub", "/k/release.pub"] };
    });
    const keys = await loadPolicyKeys(c, readFile);
    expect(keys.get("api")?.map((k) => k.algorithm)).toEqual(["ecdsa-p256"]);
    expect(keys.get("node-agent")?.map((k) => k.algorithm)).toEqual(["ed25519", "ecdsa-p256"]);
  });

  test("a missing or bad key file is a configuration error naming the field and the file", async () => {
    const c = config((c) => {
      c.verify = { keys: ["/k/missing.pub"] };
      c.images[1].verify = { keys: ["/k/bad.pub"] };
    });
    const err = await loadPolicyKeys(c, readFile).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      "verify.keys[0]: cannot read /k/missing.pub: no such file",
      'images[1].verify.keys[0]: /k/bad.pub holds no PEM "PUBLIC KEY" block',
    ]);
  });
});
