// Credentials out of every text a server sends back. A proxy's error page that lists the request
// headers, an admission webhook quoting its caller, a registry error body: each may repeat the
// Authorization header, and what a server says becomes an error message, a log field and a span
// attribute: the token and the registry credentials must never appear there.
// Known secrets are replaced wherever they appear; credentials this process did not send (an
// older token, another client's) are caught by their shape.

import { decodeBase64Utf8, encodeBase64Utf8 } from "./base64.ts";

export const REDACTED = "[redacted]";

// A scheme followed by its credential, as in an Authorization header or a quoted one.
const SCHEMED = /\b(Bearer|Basic)(\s+|%20|\+)[A-Za-z0-9._~+/=%-]{8,}/gi;
// A JSON Web Token (service-account and OIDC tokens): three base64url parts, the first `{"`.
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
// `Authorization: <anything>` to the end of the line or of the quoted value.
const HEADER = /(authorization["']?\s*[:=]\s*["']?)[^"'\r\n<>,}]+/gi;

/** The forms in which a secret may come back: as sent, base64-encoded (Basic) and URL-encoded. */
export function secretForms(secrets: Iterable<string | undefined>): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    // Short values (an empty password, "x") would redact ordinary words; the shapes cover them.
    if (!s || s.length < 4) continue;
    out.add(s);
    out.add(encodeURIComponent(s));
  }
  // Longest first, so that a secret containing another is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
}

/** The secrets inside an Authorization value: the value, its credential, and for Basic the password. */
export function authorizationSecrets(authorization: string | undefined): string[] {
  if (!authorization) return [];
  const [scheme = "", credential = ""] = authorization.split(/\s+/, 2);
  const out = [authorization, credential];
  if (scheme.toLowerCase() === "basic") {
    const decoded = decodeBase64Utf8(credential);
    const colon = decoded.indexOf(":");
    out.push(decoded, colon >= 0 ? decoded.slice(colon + 1) : "");
  }
  return out;
}

export function basicSecrets(username: string, password: string): string[] {
  const pair = `${username}:${password}`;
  return [password, pair, encodeBase64Utf8(pair)];
}

/** `text` with every known secret and everything shaped like a credential replaced. */
export function scrub(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const s of secretForms(secrets)) out = out.split(s).join(REDACTED);
  return out
    .replace(SCHEMED, (_m, scheme: string, gap: string) => `${scheme}${gap}${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(HEADER, (_m, head: string) => `${head}${REDACTED}`);
}
