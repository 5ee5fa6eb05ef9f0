// Registry credentials from a kubernetes.io/dockerconfigjson file, looked up the way kubelet does
// for a host. The secrets live in a private class field so that logging or serialising the
// object by accident shows only which hosts have credentials.
import { readFileSync } from "node:fs";
import type * as z from "zod/mini";
import { decodeBase64Utf8 } from "../base64.ts";
import { checkDockerCfg, checkDockerConfig } from "../checks/checks.generated.ts";
import { lazy, parseChecked } from "../issues.ts";
import { isDockerHub } from "./reference.ts";

export interface BasicCredentials {
  username: string;
  password: string;
  /**
   * Where they came from and what they need, for the message when the registry refuses them
   * (a cloud identity's token); a dockerconfigjson's entry has none.
   */
  origin?: string;
}

interface Entry extends BasicCredentials {
  /** The key as written, for error messages. */
  key: string;
  /** Lower-cased host[:port] the key names. */
  host: string;
}

export class DockerCredentials {
  readonly #entries: readonly Entry[];
  constructor(entries: readonly Entry[]) {
    this.#entries = entries;
  }
  get entries(): readonly Entry[] {
    return this.#entries;
  }
  /** Hosts that have credentials; safe to log. */
  hosts(): string[] {
    return this.#entries.map((e) => e.host);
  }
  /** The keys as written in the file, for a message saying none matches; safe to log. */
  keys(): string[] {
    return this.#entries.map((e) => e.key);
  }
  toJSON(): { hosts: string[] } {
    return { hosts: this.hosts() };
  }
}

// `.dockerconfigjson` wraps the map in `auths`; the legacy `.dockercfg` is the bare map (both
// compiled into lib/checks/checks.generated.ts).
export const dockerConfigSchemas = lazy((z) => {
  const entry = z.object({
    username: z.optional(z.string()),
    password: z.optional(z.string()),
    auth: z.optional(z.string()),
  });
  const map = z.record(z.string(), entry);
  return { entry, map, wrapped: z.object({ auths: map }) };
});

/** `https://index.docker.io/v1/` → `index.docker.io`: scheme and path are not part of the match. */
export function normaliseKey(key: string): string {
  return key
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")
    .split("/")[0]
    ?.toLowerCase() as string;
}

function decodeAuth(key: string, auth: string): BasicCredentials {
  const decoded = decodeBase64Utf8(auth);
  const colon = decoded.indexOf(":");
  if (colon < 1) throw new Error(`auths["${key}"].auth is not base64 of "username:password"`);
  // Split at the first colon only: passwords may contain colons, usernames may not.
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function toEntry(
  key: string,
  raw: z.output<ReturnType<typeof dockerConfigSchemas>["entry"]>,
): Entry | undefined {
  if (raw.auth) return { key, host: normaliseKey(key), ...decodeAuth(key, raw.auth) };
  if (raw.username && raw.password !== undefined) {
    return { key, host: normaliseKey(key), username: raw.username, password: raw.password };
  }
  return undefined; // e.g. an email-only or identity-token entry: nothing we can send
}

function parseOrThrow<S extends z.ZodMiniType>(
  check: (v: unknown) => unknown,
  schema: () => S,
  json: unknown,
): z.output<S> {
  const parsed = parseChecked(check, schema, json);
  if (parsed.ok) return parsed.value;
  const issue = parsed.issues[0];
  const where = issue?.path.length ? issue.path.map(String).join(".") : "the top level";
  // Only the path and the issue code: a message may name the offending value.
  throw new Error(`${where} is not valid registry credentials (${issue?.code ?? "invalid"})`);
}

/** Parses file text; messages name the field that is wrong but never quote a value. */
export function parseDockerConfig(text: string): DockerCredentials {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's own message may quote part of the file, which may be a secret.
    throw new Error("it is not valid JSON");
  }
  const wrapped = typeof json === "object" && json !== null && "auths" in json;
  const map = wrapped
    ? parseOrThrow(checkDockerConfig, () => dockerConfigSchemas().wrapped, json).auths
    : parseOrThrow(checkDockerCfg, () => dockerConfigSchemas().map, json);
  const entries: Entry[] = [];
  for (const [key, raw] of Object.entries(map)) {
    const entry = toEntry(key, raw);
    if (entry) entries.push(entry);
  }
  return new DockerCredentials(entries);
}

export function loadDockerConfig(
  path: string,
  readFile: (p: string) => string = (p) => readFileSync(p, "utf8"),
): DockerCredentials {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // The code travels with the error: a caller tells a file that is not there (ENOENT) from one it may not read.
    throw Object.assign(
      new Error(`Cannot read registry credentials from ${path}: ${code ?? (err as Error).message}`),
      {
        code,
      },
    );
  }
  try {
    return parseDockerConfig(text);
  } catch (err) {
    throw new Error(`Cannot read registry credentials from ${path}: ${(err as Error).message}`);
  }
}

/**
 * Credentials for a registry host. An exact key wins; for Docker Hub every alias matches
 * (`docker.io`, `index.docker.io`, `registry-1.docker.io`, `https://index.docker.io/v1/`).
 */
export function credentialsFor(creds: DockerCredentials, host: string): BasicCredentials | undefined {
  const want = normaliseKey(host);
  const exact = creds.entries.find((e) => e.host === want);
  const match = exact ?? (isDockerHub(want) ? creds.entries.find((e) => isDockerHub(e.host)) : undefined);
  return match ? { username: match.username, password: match.password } : undefined;
}
