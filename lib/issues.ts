// What every boundary shares on top of zod/mini: parsing into issues that carry a path
// (`images[0].targets[1].kind`), and the few checks zod does not have in the form we need.
// zod/mini rather than classic zod: it is tree-shaken and the lighter of the two to build.
// A tick runs the checks compiled from the schemas (lib/checks/) and builds a schema only to say
// why a value was refused; zod itself is evaluated on first use (lib/zod.ts), so a tick with
// valid inputs, `version` and `--help` never load it (docs/benchmarks.md).
import type * as z from "zod/mini";
import { FAIL } from "./checks/fail.ts";
import { isHttpUrl, noCredentials } from "./checks/refinements.ts";
import { mark } from "./startup-timing.ts";
import { type Zod, zod } from "./zod.ts";

mark("chunks-loaded");

export type Key = PropertyKey;

/**
 * A schema built on its first use, with zod (evaluated then, if it was not yet). Building zod
 * schemas is most of what a cold start would cost (the first run of each constructor), so no
 * schema is built until a boundary needs zod to say why a value was refused.
 */
export function lazy<S>(build: (z: Zod) => S): () => S {
  let built: S | undefined;
  return () => {
    built ??= build(zod());
    return built;
  };
}

export interface Issue {
  path: Key[];
  code: string;
  message: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

/** Parses `value`; the issues keep zod's path, code and message (never the value itself). */
export function parse<S extends z.ZodMiniType>(schema: S, value: unknown): Parsed<z.output<S>> {
  const r = schema.safeParse(value);
  if (r.success) return { ok: true, value: r.data as z.output<S> };
  return {
    ok: false,
    issues: r.error.issues.map((i) => ({ path: [...i.path], code: i.code, message: i.message })),
  };
}

/**
 * A boundary's parse: the check compiled from its schema (lib/checks/) when it accepts the value,
 * else zod, built on first use, with every issue. The same answer as `parse(schema(), value)`.
 */
export function parseChecked<S extends z.ZodMiniType>(
  check: (value: unknown) => unknown,
  schema: () => S,
  value: unknown,
): Parsed<z.output<S>> {
  const fast = check(value);
  if (fast !== FAIL) return { ok: true, value: fast as z.output<S> };
  return parse(schema(), value);
}

/** `images[0].targets[1].kind`; `(root)` for the top level. */
export function formatPath(path: readonly Key[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || "(root)";
}

/** A string matching `re`, refused with `message` (the operator's words, not a regex). */
export function matching(re: RegExp, message: string, ...more: z.core.$ZodCheck<string>[]) {
  const z = zod();
  return z.string().check(...more, z.regex(re, { error: message }));
}

/**
 * An absolute http(s) URL without a user name or password: those would travel into logs, spans
 * and error messages; `hint` says where credentials belong instead.
 */
export function urlWithoutCredentials(hint: string) {
  const z = zod();
  return z.string().check(
    z.refine(isHttpUrl, { error: "Invalid URL", abort: true }),
    z.refine(noCredentials, {
      error: `must not contain a user name or password; ${hint}`,
      abort: true,
    }),
    // What the JSON Schema can say of the two checks above (and `new URL` would also take
    // `https:host`, which no one means).
    z.regex(HTTP_URL, { error: "Invalid URL" }),
  );
}

/** http(s)://, then an authority without `@` (no user info), then anything but whitespace. */
const HTTP_URL = /^https?:\/\/[^\s/?#@]+([/?#]\S*)?$/;
