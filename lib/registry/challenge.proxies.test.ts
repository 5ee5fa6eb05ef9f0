// Headers real registries and proxies send that the main table does not: stray characters, a
// truncated escape, an empty bare value. None may throw or invent a parameter.
import { expect, test } from "bun:test";
import { parseWwwAuthenticate } from "./challenge.ts";

const ROWS: Array<[string, ReturnType<typeof parseWwwAuthenticate>]> = [
  ['@ Bearer realm="https://a/t"', [{ scheme: "bearer", params: { realm: "https://a/t" } }]],
  [
    'Bearer realm="https://a/t", (service="s"',
    [{ scheme: "bearer", params: { realm: "https://a/t", service: "s" } }],
  ],
  ['Bearer realm="abc\\', [{ scheme: "bearer", params: { realm: "abc" } }]],
  ['Bearer realm=, service="s"', [{ scheme: "bearer", params: { service: "s" } }]],
  ['Bearer realm="", service="s"', [{ scheme: "bearer", params: { service: "s" } }]],
];

for (const [header, want] of ROWS)
  test(JSON.stringify(header), () => expect(parseWwwAuthenticate(header)).toEqual(want));
