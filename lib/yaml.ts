// YAML for the config file: Bun.YAML reads the values (native, well under a millisecond), and the
// `yaml` package is loaded only when a diagnosis is needed, because Bun.YAML neither says where a
// syntax error is nor refuses a key given twice (it keeps the last, silently). `yaml` is the
// yaml-test-suite-conformant JS parser; parsing a config with it costs 4-6 ms in the compiled
// binary, too much for every tick, so it runs only when the cheap screen below is not sure.
import type * as Yaml from "./yaml-parts.ts";

export class YamlError extends Error {
  override name = "YamlError";
  constructor(
    message: string,
    /** One line per key given twice: `images[0].targets[0].name: given twice (line 9, column 7 and line 10, column 7)`. */
    readonly problems: string[] = [],
  ) {
    super(message);
  }
}

// require, not import: the bundle loads lib/yaml-parts.ts's chunk and runs it only on this call.
const loadYaml = (): typeof Yaml => require("./yaml-parts.ts");

/** Parses YAML (or JSON) text; a syntax error gives its line and column, a repeated key its path. */
export function parseYaml(text: string): unknown {
  let value: unknown;
  try {
    value = Bun.YAML.parse(text);
  } catch (err) {
    throw new YamlError(syntaxError(text) ?? (err as Error).message);
  }
  if (keyTokens(text) > keysIn(value)) {
    const twice = duplicateKeys(text);
    if (twice.length) throw new YamlError("a key is given twice", twice);
  }
  return value;
}

/** `line 3, column 5: <the yaml package's message>`, or undefined if it finds nothing wrong. */
function syntaxError(text: string): string | undefined {
  const Y = loadYaml();
  const lines = new Y.LineCounter();
  const doc = Y.parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
  const first = doc.errors[0];
  if (!first) return undefined;
  const at = lines.linePos(first.pos[0]);
  return `line ${at.line}, column ${at.col}: ${first.message.split("\n")[0]}`;
}

/**
 * An upper bound on the mapping keys written in `text`: every `:` outside quotes and comments
 * that ends a key (followed by a space, a line end, or right after a quoted key, as JSON writes
 * it), and every explicit `? ` key. A duplicate makes the parsed value hold fewer keys than this;
 * anything the screen over-counts (a colon in a block scalar) only costs a full check.
 */
export function keyTokens(text: string): number {
  // Jumps from one character that matters to the next (a regex runs natively; a loop over every
  // character is a tenth of a millisecond of a tick's start-up).
  const special = /["'#:?<]/g;
  let n = 0;
  for (let m = special.exec(text); m; m = special.exec(text)) {
    const i = m.index;
    const c = m[0];
    const prev = i === 0 ? "\n" : (text[i - 1] as string);
    if ((c === '"' || c === "'") && !/[\w]/.test(prev)) {
      const end = closingQuote(text, i);
      if (end < 0) break;
      special.lastIndex = end + 1;
    } else if (c === "#" && /\s/.test(prev)) special.lastIndex = skipLine(text, i) + 1;
    else if (
      c === ":" &&
      (i + 1 === text.length || /[\s,\]}]/.test(text[i + 1] as string) || /["']/.test(prev))
    )
      n++;
    else if (c === "?" && /\s/.test(prev) && /\s/.test(text[i + 1] ?? "\n")) n++;
    // Merge keys copy other mappings' keys in: the count would no longer bound anything.
    else if (c === "<" && text.startsWith("<<", i)) return Number.POSITIVE_INFINITY;
  }
  return n;
}

/** The index of the quote that closes the one at `open` (a backslash escapes in "..."), or -1. */
function closingQuote(text: string, open: number): number {
  const q = text[open] as string;
  if (q === "'") return text.indexOf("'", open + 1);
  const rest = /(?:[^"\\]|\\[\s\S])*"/y;
  rest.lastIndex = open + 1;
  return rest.exec(text) ? rest.lastIndex - 1 : -1;
}

function skipLine(text: string, i: number): number {
  const end = text.indexOf("\n", i);
  return end < 0 ? text.length : end - 1;
}

/** The keys of every mapping in a parsed value; an alias's mapping counts once, as written. */
function keysIn(value: unknown, seen = new Set<object>()): number {
  if (typeof value !== "object" || value === null || seen.has(value)) return 0;
  seen.add(value);
  const children = Array.isArray(value) ? value : Object.values(value);
  let n = Array.isArray(value) ? 0 : Object.keys(value).length;
  for (const child of children) n += keysIn(child, seen);
  return n;
}

/** Every key given twice in one mapping, by path and both positions. */
export function duplicateKeys(text: string): string[] {
  const Y = loadYaml();
  const lines = new Y.LineCounter();
  const doc = Y.parseDocument(text, { lineCounter: lines, uniqueKeys: false });
  const out: string[] = [];
  const at = (node: Yaml.Node | null | undefined) => {
    const p = lines.linePos(node?.range?.[0] ?? 0);
    return `line ${p.line}, column ${p.col}`;
  };
  const walk = (node: unknown, path: string) => {
    if (Y.isMap(node)) {
      const first = new Map<string, Yaml.Node>();
      for (const pair of node.items) {
        const keyNode = pair.key as Yaml.Node;
        const key = String(Y.isScalar(keyNode) ? keyNode.value : keyNode);
        const here = path ? `${path}.${key}` : key;
        const earlier = first.get(key);
        if (earlier) out.push(`${here}: given twice (${at(earlier)} and ${at(keyNode)})`);
        else first.set(key, keyNode);
        walk(pair.value, here);
      }
    } else if (Y.isSeq(node)) for (const [i, item] of node.items.entries()) walk(item, `${path}[${i}]`);
  };
  walk(doc.contents, "");
  return out;
}
