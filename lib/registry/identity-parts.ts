// What every cloud's identity login (aws/, gcp.ts, azure.ts) is made of: where it reads the
// environment and token files from, what it hands back, and the checks each makes of an identity
// endpoint and its answers. Apart from cloud.ts, which loads the clouds on first use, so that a
// cloud's module imports these without importing the module that imports it.
import type { BasicCredentials } from "./credentials.ts";
import { RegistryError } from "./errors.ts";
import { safeUrl } from "./http.ts";

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
