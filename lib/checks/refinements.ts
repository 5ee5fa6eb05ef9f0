// The refinements and transforms the schemas use, in a module without zod: the compiled checks
// call them by name (lib/checks/compile.ts finds each by identity), the zod schemas use the same
// functions.

/** An absolute http(s) URL. http: and https: are special schemes: one without a host does not parse. */
export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** A URL (isHttpUrl) without a user name or password. */
export function noCredentials(s: string): boolean {
  const u = new URL(s);
  return !u.username && !u.password;
}

/** An object's annotations as the rules read them: absent or null is none. */
export function emptyIfAbsent<T>(a: Record<string, T> | null | undefined): Record<string, T> {
  return a ?? {};
}
