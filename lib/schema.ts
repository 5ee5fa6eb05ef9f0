// Schemas for what enters the process: the config file, the kubeconfig, API objects, registry
// answers. Each is parsed once at the boundary and every problem is reported with its path
// (`images[0].targets[1].kind`), so a bad file is fixed in one go.
//
// Written by hand rather than with zod: a tick is a fresh process, and in the compiled binary
// zod cost 22 ms of CPU per start (classic) or about 20 ms of wall time before the first
// request (zod/mini: importing it, building our schemas, parsing once), a third of a no-op tick.
// These validators are plain closures; building and running all of ours costs well under 1 ms.
// The messages follow zod's English ones where an operator reads them.

export type Key = string | number;
export type IssueCode =
  | "invalid_type"
  | "invalid_value"
  | "invalid_format"
  | "too_small"
  | "too_big"
  | "unrecognized_keys"
  | "custom";

export interface Issue {
  path: Key[];
  code: IssueCode;
  message: string;
}

interface Context {
  path: Key[];
  issues: Issue[];
}

/**
 * Validates a value and returns it typed. A schema that finds a problem records it in the
 * context; the returned value means nothing once an issue is recorded.
 */
export type Schema<T> = (value: unknown, ctx: Context) => T;
export type Infer<S> = S extends Schema<infer T> ? T : never;

/** A check on a value that has the right type: a problem, or undefined when it passes. */
export type Rule<T> = (value: T) => [IssueCode, string] | undefined;

/** What a schema returns after recording an issue; callers never see it (parse() fails). */
const INVALID = undefined as never;

function report(ctx: Context, code: IssueCode, message: string): never {
  ctx.issues.push({ path: [...ctx.path], code, message });
  return INVALID;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (Number.isNaN(v)) return "NaN";
  return typeof v;
}

function wrongType(ctx: Context, expected: string, v: unknown): never {
  return report(ctx, "invalid_type", `Invalid input: expected ${expected}, received ${kindOf(v)}`);
}

function applyRules<T>(v: T, rules: readonly Rule<T>[], ctx: Context): T {
  for (const rule of rules) {
    const problem = rule(v);
    if (problem) report(ctx, problem[0], problem[1]);
  }
  return v;
}

export function string(...rules: Rule<string>[]): Schema<string> {
  return (v, ctx) => (typeof v === "string" ? applyRules(v, rules, ctx) : wrongType(ctx, "string", v));
}

export const maxLength =
  (n: number): Rule<string> =>
  (s) =>
    s.length > n ? ["too_big", `Too big: expected string to have <=${n} characters`] : undefined;

export const minLength =
  (n: number, message = `Too small: expected string to have >=${n} characters`): Rule<string> =>
  (s) =>
    s.length < n ? ["too_small", message] : undefined;

export const pattern =
  (re: RegExp, message: string): Rule<string> =>
  (s) =>
    re.test(s) ? undefined : ["invalid_format", message];

/** A safe integer (the API's int32/int64 fields and our counts); 1.5, NaN and Infinity are not. */
export function integer(...rules: Rule<number>[]): Schema<number> {
  return (v, ctx) => {
    if (typeof v !== "number" || Number.isNaN(v)) return wrongType(ctx, "number", v);
    if (!Number.isSafeInteger(v))
      return report(ctx, "invalid_type", "Invalid input: expected int, received number");
    return applyRules(v, rules, ctx);
  };
}

export const atLeast =
  (n: number): Rule<number> =>
  (x) =>
    x < n ? ["too_small", `Too small: expected number to be >=${n}`] : undefined;

export const atMost =
  (n: number): Rule<number> =>
  (x) =>
    x > n ? ["too_big", `Too big: expected number to be <=${n}`] : undefined;

export const boolean: Schema<boolean> = (v, ctx) =>
  typeof v === "boolean" ? v : wrongType(ctx, "boolean", v);

/** Anything at all, kept as it is (a field we only test for presence). */
export const unknown: Schema<unknown> = (v) => v;

export function oneOf<const V extends readonly string[]>(values: V): Schema<V[number]> {
  const shown = values.map((x) => JSON.stringify(x)).join("|");
  return (v, ctx) =>
    (values as readonly unknown[]).includes(v)
      ? (v as V[number])
      : report(ctx, "invalid_value", `Invalid option: expected one of ${shown}`);
}

/** An absolute http(s) URL whose scheme is one of `protocols` (e.g. ["http:", "https:"]). */
export function url(protocols: readonly string[]): Schema<string> {
  return (v, ctx) => {
    if (typeof v !== "string") return wrongType(ctx, "string", v);
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      return report(ctx, "invalid_format", "Invalid URL");
    }
    // http: and https: are special schemes: a URL of theirs without a host does not parse.
    return protocols.includes(parsed.protocol) ? v : report(ctx, "invalid_format", "Invalid URL");
  };
}

/**
 * A URL as `url` checks it that carries no user name or password: those would travel into
 * logs, spans and error messages; `hint` says where credentials belong instead.
 */
export function urlWithoutCredentials(protocols: readonly string[], hint: string): Schema<string> {
  return map(url(protocols), (s) => {
    const u = new URL(s);
    return u.username || u.password ? { problem: `must not contain a user name or password; ${hint}` } : s;
  });
}

export function optional<T>(schema: Schema<T>): Schema<T | undefined> {
  return (v, ctx) => (v === undefined ? undefined : schema(v, ctx));
}

/** Absent or null (what a YAML `key:` with no value gives) both read as undefined. */
export function nullish<T>(schema: Schema<T>): Schema<T | undefined> {
  return (v, ctx) => (v === undefined || v === null ? undefined : schema(v, ctx));
}

/** `fallback` when absent; it is not validated, as it is ours. */
export function withDefault<T>(schema: Schema<T>, fallback: T): Schema<T> {
  return (v, ctx) => (v === undefined ? fallback : schema(v, ctx));
}

/** Converts a valid value; `convert` returns `{ problem }` to refuse it with that message. */
export function map<T, U>(schema: Schema<T>, convert: (value: T) => U | { problem: string }): Schema<U> {
  return (v, ctx) => {
    const before = ctx.issues.length;
    const value = schema(v, ctx);
    if (ctx.issues.length > before) return INVALID;
    const out = convert(value);
    const problem = (out as { problem?: unknown } | null)?.problem;
    return typeof problem === "string" ? report(ctx, "custom", problem) : (out as U);
  };
}

export function array<T>(item: Schema<T>, ...rules: Rule<unknown[]>[]): Schema<T[]> {
  return (v, ctx) => {
    if (!Array.isArray(v)) return wrongType(ctx, "array", v);
    const out: T[] = [];
    for (let i = 0; i < v.length; i++) {
      ctx.path.push(i);
      out.push(item(v[i], ctx));
      ctx.path.pop();
    }
    applyRules(v, rules, ctx);
    return out;
  };
}

export const minItems =
  (n: number): Rule<unknown[]> =>
  (a) =>
    a.length < n ? ["too_small", `Too small: expected array to have >=${n} items`] : undefined;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A map with string keys; `Object.fromEntries` so that a key `__proto__` stays a plain key. */
export function record<T>(value: Schema<T>): Schema<Record<string, T>> {
  return (v, ctx) => {
    if (!isPlainObject(v)) return wrongType(ctx, "record", v);
    const entries: Array<[string, T]> = [];
    for (const k of Object.keys(v)) {
      ctx.path.push(k);
      entries.push([k, value(v[k], ctx)]);
      ctx.path.pop();
    }
    return Object.fromEntries(entries);
  };
}

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<S extends Shape> = { [K in keyof S]: undefined extends Infer<S[K]> ? K : never }[keyof S];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
export type ObjectOf<S extends Shape> = Simplify<
  { [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & { [K in OptionalKeys<S>]?: Infer<S[K]> }
>;

/**
 * An object with the fields of `shape`; other fields are dropped, or with `strict` reported
 * (a typo in a config key must not pass silently). Absent optional fields stay absent.
 */
export function object<S extends Shape>(shape: S, opts: { strict?: boolean } = {}): Schema<ObjectOf<S>> {
  const keys = Object.keys(shape);
  return (v, ctx) => {
    if (!isPlainObject(v)) return wrongType(ctx, "object", v);
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      ctx.path.push(k);
      const value = (shape[k] as Schema<unknown>)(Object.hasOwn(v, k) ? v[k] : undefined, ctx);
      ctx.path.pop();
      if (value !== undefined) out[k] = value;
    }
    if (opts.strict)
      for (const k of Object.keys(v))
        if (!Object.hasOwn(shape, k))
          report(ctx, "unrecognized_keys", `Unrecognized key: ${JSON.stringify(k)}`);
    return out as ObjectOf<S>;
  };
}

export function strictObject<S extends Shape>(shape: S): Schema<ObjectOf<S>> {
  return object(shape, { strict: true });
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

export function parse<T>(schema: Schema<T>, value: unknown): Parsed<T> {
  const ctx: Context = { path: [], issues: [] };
  const out = schema(value, ctx);
  return ctx.issues.length ? { ok: false, issues: ctx.issues } : { ok: true, value: out };
}

/** `images[0].targets[1].kind`; `(root)` for the top level. */
export function formatPath(path: readonly Key[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${p}` : p;
  return out || "(root)";
}
