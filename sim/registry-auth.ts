// Authentication of the simulated registry, after distribution's token auth: a Bearer challenge
// whose realm is this server's own /token, a token server that grants the intersection of the
// requested pull scopes and what the caller may do (an empty grant is not an error), and a
// Basic mode that wants credentials on every request.
import { randomBytes } from "node:crypto";

export type AuthMode = "bearer" | "basic" | "none";

export interface Denial {
  status: 401;
  challenge: string;
  code: "UNAUTHORIZED" | "DENIED";
  message: string;
}

export interface AuthOptions {
  mode: AuthMode;
  users?: Record<string, string>;
  anonymousPull: boolean;
  realm: string;
  service: string;
}

function parseBasic(authorization: string | undefined): { user: string; pass: string } | undefined {
  const m = /^Basic\s+(\S+)$/i.exec(authorization ?? "");
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), pass: decoded.slice(colon + 1) };
}

/** `repository:a/b:pull,push repository:c:pull` → the repositories with pull. */
function pullScopes(scopes: readonly string[]): string[] {
  const out: string[] = [];
  for (const scope of scopes.flatMap((s) => s.split(" "))) {
    const m = /^repository:([^:]+):(.+)$/.exec(scope);
    if (m?.[2]?.split(",").includes("pull")) out.push(m[1] as string);
  }
  return out;
}

export class SimAuth {
  // A real token server writes the requested service into the token's audience, and the registry
  // refuses a token whose audience is not its own; so does this one.
  readonly #tokens = new Map<string, { repos: Set<string>; expires: number; service?: string }>();
  constructor(readonly opts: AuthOptions) {}

  #validUser(authorization: string | undefined): boolean | undefined {
    const basic = parseBasic(authorization);
    if (!basic) return undefined;
    if (!this.opts.users) return true; // no user list: any credentials will do
    return this.opts.users[basic.user] === basic.pass;
  }

  /** undefined when the request may proceed; `repository` absent for the API root. */
  check(authorization: string | undefined, repository?: string): Denial | undefined {
    if (this.opts.mode === "none") return undefined;
    if (this.opts.mode === "basic") {
      if (this.#validUser(authorization)) return undefined;
      return {
        status: 401,
        challenge: `Basic realm="${this.opts.service}"`,
        code: "UNAUTHORIZED",
        message: "authentication required",
      };
    }
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
    const token = m ? this.#tokens.get(m[1] as string) : undefined;
    const valid = token !== undefined && token.expires > Date.now() && token.service === this.opts.service;
    if (valid && (repository === undefined || token.repos.has(repository))) return undefined;
    let challenge = `Bearer realm="${this.opts.realm}",service="${this.opts.service}"`;
    if (repository !== undefined) challenge += `,scope="repository:${repository}:pull"`;
    if (m) challenge += `,error="${valid ? "insufficient_scope" : "invalid_token"}"`;
    return { status: 401, challenge, code: "UNAUTHORIZED", message: "authentication required" };
  }

  /** GET <realm>?service=…&scope=…: a token for the granted scopes, or 401 for bad credentials. */
  token(
    authorization: string | undefined,
    scopes: readonly string[],
    service?: string,
  ): { status: number; body: unknown } {
    const user = this.#validUser(authorization);
    if (user === false) {
      return {
        status: 401,
        body: { errors: [{ code: "UNAUTHORIZED", message: "incorrect username or password" }] },
      };
    }
    const granted = user || this.opts.anonymousPull ? pullScopes(scopes) : [];
    const token = randomBytes(24).toString("base64url");
    const expiresIn = 300;
    this.#tokens.set(token, { repos: new Set(granted), expires: Date.now() + expiresIn * 1000, service });
    return {
      status: 200,
      body: { token, access_token: token, expires_in: expiresIn, issued_at: new Date().toISOString() },
    };
  }
}
