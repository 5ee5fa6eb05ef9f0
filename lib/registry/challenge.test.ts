import { describe, expect, test } from "bun:test";
import { type Challenge, parseWwwAuthenticate } from "./challenge.ts";

describe("parseWwwAuthenticate", () => {
  const cases: Array<[string, string, Challenge[]]> = [
    [
      "Docker Hub",
      'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      [
        {
          scheme: "bearer",
          params: {
            realm: "https://auth.docker.io/token",
            service: "registry.docker.io",
            scope: "repository:library/nginx:pull",
          },
        },
      ],
    ],
    [
      "comma inside quotes, error param",
      'Bearer realm="https://r.example/token",scope="repository:a/b:pull,push",error="insufficient_scope"',
      [
        {
          scheme: "bearer",
          params: {
            realm: "https://r.example/token",
            scope: "repository:a/b:pull,push",
            error: "insufficient_scope",
          },
        },
      ],
    ],
    [
      "several scopes space-separated",
      'Bearer realm="https://t/x",scope="repository:a:pull repository:b:pull"',
      [{ scheme: "bearer", params: { realm: "https://t/x", scope: "repository:a:pull repository:b:pull" } }],
    ],
    ["escaped quote", 'Bearer realm="a\\"b"', [{ scheme: "bearer", params: { realm: 'a"b' } }]],
    ["Basic", 'Basic realm="Registry Realm"', [{ scheme: "basic", params: { realm: "Registry Realm" } }]],
    [
      "two challenges",
      'Basic realm="x", Bearer realm="https://y/token",service="z"',
      [
        { scheme: "basic", params: { realm: "x" } },
        { scheme: "bearer", params: { realm: "https://y/token", service: "z" } },
      ],
    ],
    ["case-insensitive names", 'BEARER Realm="x"', [{ scheme: "bearer", params: { realm: "x" } }]],
    [
      "unquoted values and loose spacing",
      "Bearer realm = https://t/token , service = reg",
      [{ scheme: "bearer", params: { realm: "https://t/token", service: "reg" } }],
    ],
    [
      "token68 then a challenge",
      'Negotiate abc==, Basic realm="r"',
      [
        { scheme: "negotiate", params: {} },
        { scheme: "basic", params: { realm: "r" } },
      ],
    ],
    ["bare scheme", "Bearer", [{ scheme: "bearer", params: {} }]],
    ["empty", "", []],
    ["truncated quote", 'Bearer realm="https://t', [{ scheme: "bearer", params: { realm: "https://t" } }]],
    ["parameter before any scheme is dropped", 'realm="x"', []],
  ];
  for (const [name, header, want] of cases) {
    test(name, () => {
      expect(parseWwwAuthenticate(header)).toEqual(want);
    });
  }
});
