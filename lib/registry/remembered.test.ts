// Which stored answers of a registry's API root a tick believes: only its own registry's, and
// only a realm on that registry's origin (a writer of the store must not be able to send the
// pull secret anywhere else).
import { describe, expect, test } from "bun:test";
import { rememberedAnswer, toRemember } from "./remembered.ts";

const ENDPOINT = "https://registry.example:5000";
const bearer = (realm: string) => `Bearer realm="${realm}",service="registry.example"`;

describe("a remembered answer is believed", () => {
  test("open, for the registry it was learned from", () => {
    expect(rememberedAnswer(`${ENDPOINT} open`, ENDPOINT)).toBe("open");
  });
  test("a Bearer challenge whose realm is on the registry's own origin", () => {
    const c = bearer(`${ENDPOINT}/service/token`);
    expect(rememberedAnswer(`${ENDPOINT} ${c}`, ENDPOINT)).toBe(c);
  });
  test("a Basic challenge (the credential goes to the registry itself)", () => {
    expect(rememberedAnswer(`${ENDPOINT} Basic realm="x"`, ENDPOINT)).toBe('Basic realm="x"');
  });
  test("Docker Hub's token service on auth.docker.io", () => {
    const hub = "https://registry-1.docker.io";
    const c = bearer("https://auth.docker.io/token");
    expect(rememberedAnswer(`${hub} ${c}`, hub)).toBe(c);
  });
});

describe("a remembered answer is not believed (the tick asks the registry again)", () => {
  const refused: Array<[string, string]> = [
    ["a realm on another host", `${ENDPOINT} ${bearer("https://collector.evil.example/token")}`],
    [
      "a realm on another port of the same host",
      `${ENDPOINT} ${bearer("https://registry.example:5001/token")}`,
    ],
    ["a realm over plain http", `${ENDPOINT} ${bearer("http://registry.example:5000/token")}`],
    ["auth.docker.io for another registry", `${ENDPOINT} ${bearer("https://auth.docker.io/token")}`],
    ["a realm that is not a URL", `${ENDPOINT} ${bearer("not a url")}`],
    ["a Bearer challenge without a realm", `${ENDPOINT} Bearer service="registry.example"`],
    ["another registry's answer", "https://other.example open"],
    ["an endpoint that is only a prefix", `${ENDPOINT}0 open`],
    ["no endpoint", "open"],
    ["a scheme nobody answers", `${ENDPOINT} Negotiate abc`],
    ["a line break", `${ENDPOINT} Basic realm="x"\nBearer realm="${ENDPOINT}/t"`],
    ["an overlong value", `${ENDPOINT} Basic realm="${"x".repeat(3000)}"`],
  ];
  test.each(refused)("%s", (_, stored) => {
    expect(rememberedAnswer(stored, ENDPOINT)).toBeUndefined();
  });
  test("nothing stored", () => {
    expect(rememberedAnswer(undefined, ENDPOINT)).toBeUndefined();
  });
});

describe("what a tick stores for the answer it got", () => {
  test("its own registry's answers, prefixed with the endpoint", () => {
    expect(toRemember("open", ENDPOINT)).toBe(`${ENDPOINT} open`);
    const c = bearer(`${ENDPOINT}/token`);
    expect(toRemember(c, ENDPOINT)).toBe(`${ENDPOINT} ${c}`);
  });
  test("nothing (null: remove) for an answer a later tick would not believe", () => {
    expect(toRemember(bearer("https://auth.gitlab.example/jwt/auth"), ENDPOINT)).toBeNull();
    expect(toRemember("", ENDPOINT)).toBeNull();
  });
  test("whatever it stores, the next tick believes", () => {
    for (const answer of ["open", bearer(`${ENDPOINT}/t`), 'Basic realm="r"']) {
      const stored = toRemember(answer, ENDPOINT) as string;
      expect(rememberedAnswer(stored, ENDPOINT)).toBe(answer);
    }
  });
});
