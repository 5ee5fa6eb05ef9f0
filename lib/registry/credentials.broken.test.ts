// Entries we cannot send, legacy files, and the messages of a broken file: they name the field
// and the kind of problem, never a value (the file is a secret).
import { describe, expect, test } from "bun:test";
import { credentialsFor, loadDockerConfig, parseDockerConfig } from "./credentials.ts";

describe("entries without a usable username and password", () => {
  const ROWS: Array<[string, Record<string, unknown>]> = [
    ["a password alone", { password: "p" }],
    ["a username alone", { username: "u" }],
    ["an email alone", { email: "e@example.com" }],
  ];
  for (const [name, entry] of ROWS)
    test(`${name} gives no credentials`, () => {
      const creds = parseDockerConfig(JSON.stringify({ auths: { "r.example": entry } }));
      expect(creds.hosts()).toEqual([]);
      expect(credentialsFor(creds, "r.example")).toBeUndefined();
    });
});

test("a legacy .dockercfg map (no auths wrapper) is read", () => {
  const creds = parseDockerConfig(
    JSON.stringify({ "https://r.example/v1/": { username: "u", password: "p" } }),
  );
  expect(credentialsFor(creds, "r.example")).toEqual({ username: "u", password: "p" });
});

describe("broken files", () => {
  const ROWS: Array<[string, string]> = [
    ["[]", "the top level is not valid registry credentials (invalid_type)"],
    ['"text"', "the top level is not valid registry credentials (invalid_type)"],
    ["null", "the top level is not valid registry credentials (invalid_type)"],
    [
      '{"auths": {"r.example": {"username": 7}}}',
      "auths.r.example.username is not valid registry credentials (invalid_type)",
    ],
    ["{", "it is not valid JSON"],
  ];
  for (const [text, message] of ROWS)
    test(text, () => expect(() => parseDockerConfig(text)).toThrow(message));

  test("an unreadable file is named with its error code only", () => {
    const readFile = () => {
      throw Object.assign(new Error("EACCES: permission denied, open '/s/.dockerconfigjson'"), {
        code: "EACCES",
      });
    };
    expect(() => loadDockerConfig("/s/.dockerconfigjson", readFile)).toThrow(
      /^Cannot read registry credentials from \/s\/\.dockerconfigjson: EACCES$/,
    );
  });
});
