// What a registry lookup is asked with and answers: shared by client.ts (the budget, the 429
// rule) and heads.ts (one HEAD per repository), so neither imports the other for its types.
import type { Logger } from "../log.ts";
import type { Telemetry } from "../telemetry.ts";
import type { TokenEndpoint } from "./auth.ts";
import type { BasicCredentials } from "./credentials.ts";
import type { RegistryFailure } from "./errors.ts";
import type { HttpContext } from "./http.ts";
import type { RetryAfter } from "./retry-after.ts";

/** One tag of one repository. */
export interface Lookup {
  repository: string;
  tag: string;
}

/** A lookup's name in results: `<repository>:<tag>`. */
export const lookupId = (l: Lookup): string => `${l.repository}:${l.tag}`;

export type DigestResult =
  | { ok: true; digest: string }
  | { ok: false; reason: RegistryFailure; message: string };

/** Per repository, in the order asked; plus the 429's Retry-After when the registry sent one. */
export class DigestResults extends Map<string, DigestResult> {
  /** Set when a 429 carried a readable Retry-After: store it, and call nothing before `at`. */
  retryAfter?: RetryAfter;
  /**
   * The registry's API root's answer to keep for the next tick (remembered.ts): set when this
   * tick asked it; null when it is not to be kept (or a remembered one failed): remove it.
   */
  remember?: string | null;
}

export interface ResolveOptions {
  host: string;
  endpoint?: string;
  insecure?: boolean;
  credentials?: BasicCredentials;
  /**
   * Without credentials: that none is configured for this host and where to configure it, said
   * with a 401 (default: only that none is configured).
   */
  noCredential?: string;
  /**
   * Credentials got from a cloud's identity (`auth: aws | gcp | azure`), asked once this tick only when the
   * registry is to be called at all; a failure is every image's (a refused identity).
   */
  identity?: (ctx: HttpContext) => Promise<{ credentials: BasicCredentials; secrets: string[] }>;
  /** Configured token endpoint: no challenge probe. */
  token?: TokenEndpoint;
  /**
   * The API root's answer an earlier tick stored (`<endpoint> open` or `<endpoint> <challenge>`):
   * believed only under the rules of remembered.ts, and then no probe.
   */
  storedAnswer?: string;
  requestTimeoutMs: number;
  /** The tick's deadline. */
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  fetch?: typeof fetch;
  /** HEADs in flight at once; default 8. */
  concurrency?: number;
  /**
   * The registry asked (an earlier 429's Retry-After) not to be called before this time: while
   * `now` is before it, nothing is sent and every repository is `rate_limited`.
   */
  notBefore?: Date;
  /** Clock for `notBefore` (ms); defaults to Date.now. The tick passes its API-server clock. */
  now?: () => number;
  /**
   * Extra trust anchor (PEM). Processes started with NODE_EXTRA_CA_CERTS need none: Bun reads
   * that variable at start-up (also in a compiled binary), but not when it is set later, so an
   * in-process caller with a per-run CA (the demo, tests) passes it here.
   */
  ca?: string;
}
