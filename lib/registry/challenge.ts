// WWW-Authenticate parsing (RFC 9110 §11.6.1). Written by hand because the grammar is small and
// every library found either drops quoted commas or hard-codes Docker Hub's realm.

export interface Challenge {
  /** Lower-cased auth scheme, e.g. "bearer" or "basic". */
  scheme: string;
  /** Parameters with lower-cased names; quoted values unescaped. */
  params: Record<string, string>;
}

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;

interface Cursor {
  s: string;
  i: number;
}

function skip(c: Cursor, chars: RegExp): void {
  while (c.i < c.s.length && chars.test(c.s[c.i] as string)) c.i++;
}

function readToken(c: Cursor): string {
  const start = c.i;
  while (c.i < c.s.length && TOKEN.test(c.s[c.i] as string)) c.i++;
  return c.s.slice(start, c.i);
}

/** An unquoted value. Lenient on purpose: some servers leave a realm URL unquoted. */
function readBare(c: Cursor): string {
  const start = c.i;
  while (c.i < c.s.length && !/[\s,]/.test(c.s[c.i] as string)) c.i++;
  return c.s.slice(start, c.i);
}

function readQuoted(c: Cursor): string {
  let out = "";
  c.i++; // opening quote
  while (c.i < c.s.length && c.s[c.i] !== '"') {
    if (c.s[c.i] === "\\") c.i++;
    out += c.s[c.i] ?? "";
    c.i++;
  }
  c.i++; // closing quote (or end of a truncated header)
  return out;
}

/**
 * Parses every challenge in a header value. A bare token starts a new challenge; `name=value`
 * adds a parameter to the current one; token68 credentials (`Negotiate abc==`) are skipped.
 */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const out: Challenge[] = [];
  const c: Cursor = { s: header, i: 0 };
  while (c.i < c.s.length) {
    skip(c, /[\s,]/);
    const name = readToken(c);
    if (!name) {
      c.i++; // a stray character; move on rather than loop forever
      continue;
    }
    skip(c, /[ \t]/);
    const current = out[out.length - 1];
    if (c.s[c.i] !== "=") {
      out.push({ scheme: name.toLowerCase(), params: {} });
      continue;
    }
    c.i++;
    if (c.s[c.i] === "=") {
      skip(c, /=/); // `abc==`: the padding of a token68, not a parameter
      continue;
    }
    skip(c, /[ \t]/);
    const value = c.s[c.i] === '"' ? readQuoted(c) : readBare(c);
    if (current && value !== "") current.params[name.toLowerCase()] = value;
  }
  return out;
}
