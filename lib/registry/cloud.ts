// The clouds' workload identities (`auth: aws | gcp | azure`) as the tick sees them: for a
// registry, a function that logs in once and hands back Basic credentials for the registry, with
// every secret of the exchange to scrub. Each cloud lives in its own module (aws/, gcp.ts,
// azure.ts), loaded only when a registry with that `auth` is about to be called, so a tick
// without one never loads it. The environment and token files are read then, not at start-up: a
// projected token that rotated is read fresh.
import type { RegistryConfig } from "../config.ts";
import type { BasicCredentials } from "./credentials.ts";
import { RegistryError } from "./errors.ts";
import { type HttpContext, safeUrl } from "./http.ts";

export type CloudEnv = Record<string, string | undefined>;

export interface CloudSource {
  env: CloudEnv;
  readFile: (path: string) => string;
  /** Plain http allowed to an endpoint that is not a loopback (the registry's insecure). */
  insecure: boolean;
}

export interface CloudLogin {
  credentials: BasicCredentials;
  /** Every secret of the exchange, the registry password included: scrubbed from any text. */
  secrets: string[];
}

export type IdentityLogin = (ctx: HttpContext) => Promise<CloudLogin>;

/**
 * One login per registry host for the life of the returned function (one tick): the tag look-up
 * and the signature look-up of the same registry share it, a refusal included, so a refused
 * identity is asked once and said once. Undefined for a registry without a cloud `auth`.
 */
export function identityLogins(
  env: CloudEnv,
  readFile: (path: string) => string,
): (registry: RegistryConfig, hostKey: string) => IdentityLogin | undefined {
  const logins = new Map<string, Promise<CloudLogin>>();
  return (registry, hostKey) => {
    const auth = registry.auth;
    if (auth !== "aws" && auth !== "gcp" && auth !== "azure") return undefined;
    const src = { env, readFile, insecure: registry.insecure };
    return (ctx) => {
      let login = logins.get(hostKey);
      if (!login) {
        login = loginWith(ctx, { auth, registry, src });
        logins.set(hostKey, login);
      }
      return login;
    };
  };
}

async function loginWith(
  ctx: HttpContext,
  opts: { auth: "aws" | "gcp" | "azure"; registry: RegistryConfig; src: CloudSource },
): Promise<CloudLogin> {
  const { auth, registry, src } = opts;
  if (auth === "aws") return (await import("./aws/ecr.ts")).ecrLogin(ctx, registry.host, src);
  if (auth === "gcp") return (await import("./gcp.ts")).gcpLogin(ctx, src);
  return (await import("./azure.ts")).azureLogin(ctx, registry, src);
}

/** A token file's content, trimmed; unreadable is a refusal naming the variable and the path. */
export function readTokenFile(src: CloudSource, path: string, what: string): string {
  try {
    return src.readFile(path).trim();
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    throw new RegistryError("unauthorized", `cannot read ${what} ${path}: ${code}`);
  }
}

/**
 * An identity endpoint's URL: https, or plain http to a loopback (a local stand-in) or where the
 * registry's settings allow it (insecure: true). Never credentials in the URL.
 */
export function identityUrl(raw: string, opts: { what: string; insecure: boolean }): URL {
  const { what, insecure } = opts;
  const url = URL.parse(raw);
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:"))
    throw new RegistryError("network", `${what}: ${raw} is not an http(s) URL`);
  if (url.username || url.password)
    throw new RegistryError("network", `${what}: the URL must not carry credentials`);
  if (url.protocol === "http:" && !insecure && !LOOPBACK.test(url.hostname))
    throw new RegistryError(
      "network",
      `${what}: ${safeUrl(url)} is plain http; credentials go over it only to a loopback, or with registry insecure: true`,
    );
  return url;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

/** An OAuth 2.0 error answer (`error`, `error_description`) or Google's (`error.status`, `error.message`), cut short. */
export function oauthError(body: string): string {
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const err = json.error;
    if (err && typeof err === "object") {
      const g = err as { status?: unknown; message?: unknown };
      return clip(`${String(g.status ?? "")}: ${String(g.message ?? "")}`);
    }
    if (typeof err === "string") return clip(`${err}: ${String(json.error_description ?? "")}`);
    const errors = json.errors as Array<{ code?: unknown; message?: unknown }> | undefined;
    if (Array.isArray(errors) && errors[0]) return clip(`${errors[0].code}: ${errors[0].message}`);
  } catch {
    // not JSON: the text itself
  }
  return clip(body);
}

function clip(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

/** A 2xx answer's JSON string field, or a server_error naming what is missing (the answer itself is never quoted). */
export function jsonField(body: string, field: string, what: string): string {
  let value: unknown;
  try {
    value = (JSON.parse(body) as Record<string, unknown>)[field];
  } catch {
    throw new RegistryError("server_error", `${what}: the answer is not JSON`);
  }
  if (typeof value !== "string" || value === "")
    throw new RegistryError("server_error", `${what}: the answer holds no ${field}`);
  return value;
}

/** 400, 401, 403 (and 404 from a metadata server that knows no such account): the identity is refused. */
export function refusedStatus(status: number): boolean {
  return status === 400 || status === 401 || status === 403 || status === 404;
}
