// Duplicate keys and syntax-error positions, and the screen that keeps the
// full diagnostic parser off a normal tick's path.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { keyTokens, parseYaml, YamlError } from "./yaml.ts";

function problems(text: string): string[] {
  try {
    parseYaml(text);
    return [];
  } catch (err) {
    if (!(err instanceof YamlError)) throw err;
    return err.problems.length ? err.problems : [err.message];
  }
}

describe("a key given twice in one mapping", () => {
  const ROWS: Array<[string, string, string[]]> = [
    [
      "at the top",
      "tag: a\nimages: []\ntag: b\n",
      ["tag: given twice (line 1, column 1 and line 3, column 1)"],
    ],
    [
      "nested",
      "registry:\n  host: a\n  host: b\n",
      ["registry.host: given twice (line 2, column 3 and line 3, column 3)"],
    ],
    [
      "in a flow mapping inside sequences",
      "images:\n  - targets:\n      - { kind: A, name: x, name: y }\n",
      ["images[0].targets[0].name: given twice (line 3, column 20 and line 3, column 29)"],
    ],
    [
      "in JSON",
      '{"tag": "a", "x": {"k": 1}, "tag": "b"}',
      ["tag: given twice (line 1, column 2 and line 1, column 29)"],
    ],
    [
      "quoted once, plain once",
      "tag: a\n'tag': b\n",
      ["tag: given twice (line 1, column 1 and line 2, column 1)"],
    ],
    [
      "twice, in two places",
      "a: 1\na: 2\nb:\n  - c: 1\n    c: 2\n",
      [
        "a: given twice (line 1, column 1 and line 2, column 1)",
        "b[0].c: given twice (line 4, column 5 and line 5, column 5)",
      ],
    ],
  ];
  test.each(ROWS)("%s", (_label, text, want) => expect(problems(text)).toEqual(want));

  const FINE: Array<[string, string]> = [
    ["one name per target", "targets:\n  - { name: a }\n  - { name: b }\n"],
    ["an alias of a mapping", "a: &x { b: 1 }\nc: *x\n"],
    ["a merge key", "a: &x { b: 1 }\nc:\n  <<: *x\n  d: 2\n"],
    ["colons in a block scalar", "note: |\n  a: 1\n  a: 2\nx: 1\n"],
    ["a URL, a port and a time", "e: https://r.example:5000/v2\nt: 12:30\n"],
    ["a commented-out key", "tag: a\n# tag: b\n"],
    ["a colon in quotes", "tag: 'a: b'\nx: \"c: d\"\n"],
  ];
  test.each(FINE)("not for %s", (_label, text) => expect(problems(text)).toEqual([]));
});

describe("a syntax error", () => {
  test("gives the line and column", () => {
    expect(problems("tag: stable\nimages: [\n  a\n")[0]).toStartWith("line 4, column 1: Flow sequence");
    expect(problems("tag: stable\nx: 'open\n")).toEqual(["line 3, column 1: Missing closing 'quote"]);
    expect(problems("tag: stable\na: b: c\n")[0]).toStartWith("line 2, column 4: ");
  });
});

describe("the screen", () => {
  // When the count of key tokens equals the parsed keys, no full parse runs: a normal tick pays
  // only Bun.YAML. A count below the keys would miss a duplicate, so it must never undercount.
  const ROOT = join(import.meta.dir, "..");
  const FILES = ["k8s/base/config.yaml", "k8s/examples/two-deployments-and-daemonset/config.yaml"];
  test.each(FILES)("counts exactly the keys of %s", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    const keys = (v: unknown): number =>
      typeof v !== "object" || v === null
        ? 0
        : Array.isArray(v)
          ? v.reduce((n: number, x) => n + keys(x), 0)
          : Object.values(v).reduce((n: number, x) => n + keys(x), Object.keys(v).length);
    expect(keyTokens(text)).toBe(keys(Bun.YAML.parse(text)));
  });
  test("counts JSON's keys, explicit keys and flow mappings", () => {
    expect(keyTokens('{"a":1,"b":{"c":[1,{"d":2}]}}')).toBe(4);
    // an explicit key is counted at `?` and at its `:`: more than its 5 keys, which only costs a check
    expect(keyTokens("? a\n: 1\nb: { c: 1, d: [e: 2] }\n")).toBe(6);
  });
});

/** The screen as first written, one character at a time: the oracle for the jumping version. */
function keyTokensByChar(text: string): number {
  let n = 0;
  let quote = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = "";
      continue;
    }
    const prev = i === 0 ? "\n" : (text[i - 1] as string);
    if ((c === '"' || c === "'") && !/[\w]/.test(prev)) quote = c;
    else if (c === "#" && /\s/.test(prev)) {
      const end = text.indexOf("\n", i);
      i = end < 0 ? text.length : end - 1;
    } else if (
      c === ":" &&
      (i + 1 === text.length || /[\s,\]}]/.test(text[i + 1] as string) || /["']/.test(prev))
    )
      n++;
    else if (c === "?" && /\s/.test(prev) && /\s/.test(text[i + 1] ?? "\n")) n++;
    else if (c === "<" && text.startsWith("<<", i)) return Number.POSITIVE_INFINITY;
  }
  return n;
}

test("the screen counts as a walk over every character would, on any text", () => {
  const piece = fc.constantFrom(
    '"',
    "'",
    "\\",
    "#",
    ":",
    "?",
    "<",
    "<<",
    " ",
    "\n",
    "a",
    "1",
    ",",
    "]",
    "}",
    "{",
    "-",
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 60 }), (parts) => {
      const text = parts.join("");
      expect(keyTokens(text)).toBe(keyTokensByChar(text));
    }),
    { numRuns: 3000 },
  );
  for (const file of ["k8s/base/config.yaml", "k8s/examples/two-deployments-and-daemonset/config.yaml"]) {
    const text = readFileSync(join(import.meta.dir, "..", file), "utf8");
    expect(keyTokens(text)).toBe(keyTokensByChar(text));
  }
});
