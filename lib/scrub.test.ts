import { describe, expect, test } from "bun:test";
import { authorizationSecrets, basicSecrets, REDACTED, scrub } from "./scrub.ts";

describe("scrub", () => {
  const ROWS: Array<[string, string, string[], string]> = [
    ["a known token anywhere", "denied for tok-123456 today", ["tok-123456"], `denied for ${REDACTED} today`],
    ["a known token URL-encoded", "q=a%2Fb%3Dc", ["a/b=c"], `q=${REDACTED}`],
    ["a Bearer value of any token", "Authorization: Bearer abcdefgh12345", [], `Authorization: ${REDACTED}`],
    ["a Basic value", "got Basic cm9ib3Q6cHc= from you", [], `got Basic ${REDACTED} from you`],
    ["a JWT alone", "sub eyJhbGciOi.eyJzdWIiOi.sig-nature end", [], `sub ${REDACTED} end`],
    ["a JSON header", '{"Authorization":"Token xyz"}', [], `{"Authorization":"${REDACTED}"}`],
    ["a short secret is left to the shapes", "a b c", ["b"], "a b c"],
    ["nothing to hide", 'deployments.apps "api" not found', [], 'deployments.apps "api" not found'],
  ];
  test.each(ROWS)("%s", (_l, text, secrets, want) => expect(scrub(text, secrets)).toBe(want));
  test("the longer of two overlapping secrets is replaced whole", () => {
    expect(scrub("x robot:pw-secret y", ["pw-secret", "robot:pw-secret"])).toBe(`x ${REDACTED} y`);
  });
});

describe("the secrets of a request", () => {
  test("Basic: the value, the credential, user:password and the password", () => {
    const b64 = Buffer.from("robot:pw:with:colons").toString("base64");
    expect(authorizationSecrets(`Basic ${b64}`)).toEqual([
      `Basic ${b64}`,
      b64,
      "robot:pw:with:colons",
      "pw:with:colons",
    ]);
  });
  test("Bearer: the value and the token", () => {
    expect(authorizationSecrets("Bearer t0ken")).toEqual(["Bearer t0ken", "t0ken"]);
    expect(authorizationSecrets(undefined)).toEqual([]);
  });
  test("dockerconfigjson credentials in every form a server may quote them", () => {
    expect(basicSecrets("robot", "pw")).toEqual([
      "pw",
      "robot:pw",
      Buffer.from("robot:pw").toString("base64"),
    ]);
  });
});
