// The closed set of reasons a digest could not be resolved, and the registry's own error code
// when a response carried one. A reason is what the tick acts on; the message is for people.
import { lazy, parse } from "../issues.ts";

export type RegistryFailure =
  | "timeout"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "rate_limited"
  | "server_error"
  | "bad_digest"
  | "network"
  | "skipped_rate_limited";

// The TLS library's codes for a certificate whose issuer this process does not trust: a private
// registry's own CA, or a proxy re-signing traffic.
const UNTRUSTED_CA = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
]);

/** A connection error's code, with the way out when the registry's CA is unknown. */
export function networkDetail(code: string): string {
  if (!UNTRUSTED_CA.has(code)) return code;
  return `${code}: the registry's certificate is not signed by a CA this process trusts; set NODE_EXTRA_CA_CERTS to a PEM file holding the registry's CA (mounted into the CronJob's container)`;
}

export interface RateLimitInfo {
  retryAfter?: string;
  /** e.g. `76;w=21600`: pulls left in a window of 21600 s. */
  remaining?: string;
  limit?: string;
  /** The response's Date header: delay-seconds in Retry-After count from it. */
  date?: string;
}

export class RegistryError extends Error {
  override readonly name = "RegistryError";
  readonly reason: RegistryFailure;
  readonly status?: number;
  /** The registry's error code from an `{"errors":[…]}` body, e.g. TOOMANYREQUESTS. */
  readonly code?: string;
  /** Raw rate-limit headers of a 429 (or of any answer that carried them). */
  readonly rateLimit?: RateLimitInfo;
  /** A 401's WWW-Authenticate, so a challenge on a HEAD can be followed. */
  readonly challenge?: string;
  constructor(
    reason: RegistryFailure,
    message: string,
    opts: {
      status?: number;
      code?: string;
      rateLimit?: RateLimitInfo;
      challenge?: string;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: opts.cause });
    this.reason = reason;
    this.status = opts.status;
    this.code = opts.code;
    this.rateLimit = opts.rateLimit;
    this.challenge = opts.challenge;
  }
}

/** What a status means for one image. 408 is the server giving up waiting, so a timeout. */
export function failureForStatus(status: number): RegistryFailure {
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 408) return "timeout";
  if (status === 429) return "rate_limited";
  // Anything else unexpected (5xx, a 400, a redirect loop) is the registry's problem, not ours.
  return "server_error";
}

const errorBody = lazy((z) =>
  z.object({
    errors: z.array(z.object({ code: z.string(), message: z.optional(z.string()) })).check(z.minLength(1)),
  }),
);

/** The first error of a distribution-spec error body; undefined for other bodies. */
export function registryErrorCode(body: string): { code: string; message?: string } | undefined {
  if (!body.trimStart().startsWith("{")) return undefined;
  try {
    const parsed = parse(errorBody(), JSON.parse(body));
    return parsed.ok ? parsed.value.errors[0] : undefined;
  } catch {
    return undefined;
  }
}
