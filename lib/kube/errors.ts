// Errors of the Kubernetes client. An API error keeps the server's Status reason, code and message
// and knows whether it is transient, so call sites never classify errors themselves.

/** A bad or missing kubeconfig / in-cluster config: a configuration error, the caller exits 2. */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

export interface ApiErrorInit {
  method: string;
  /** The request URL; never carries credentials (the token travels only in a header). */
  url: string;
  /** What was being done, e.g. `Deployment apps/api` (describeWorkload), used in the message. */
  target: string;
  code: number;
  reason: string;
  statusMessage: string;
  retryAfter?: number;
  cause?: unknown;
}

export class ApiError extends Error {
  override name = "ApiError";
  readonly method: string;
  readonly url: string;
  readonly target: string;
  readonly code: number;
  readonly reason: string;
  readonly statusMessage: string;
  readonly transient: boolean;
  readonly retryAfter?: number;

  constructor(init: ApiErrorInit) {
    const codePart = init.code > 0 ? ` (${init.code})` : "";
    const msgPart = init.statusMessage ? ` ${init.statusMessage}` : "";
    super(`Cannot ${init.method} ${init.target}: ${init.reason}${codePart}${msgPart}`, { cause: init.cause });
    this.method = init.method;
    this.url = init.url;
    this.target = init.target;
    this.code = init.code;
    this.reason = init.reason;
    this.statusMessage = init.statusMessage;
    this.retryAfter = init.retryAfter;
    this.transient = isTransient(init.code, init.reason, init.retryAfter);
  }
}

/**
 * Transient = worth retrying an idempotent read: timeouts, network failures, 429 and 502–504.
 * A 500 counts only when the server says so: reason InternalError / ServerTimeout (etcd leader
 * changes and storage timeouts surface this way) or an explicit Retry-After. A 500 with an empty
 * reason is how the apiserver reports deterministic failures (e.g. a strategic patch element
 * without its merge key), and retrying those only delays the inevitable.
 */
export function isTransient(code: number, reason: string, retryAfter?: number): boolean {
  if (code === 0) return reason === "Timeout" || reason === "NetworkError";
  if (code === 429 || code === 502 || code === 503 || code === 504) return true;
  if (code === 500)
    return reason === "InternalError" || reason === "ServerTimeout" || retryAfter !== undefined;
  return false;
}

// Reasons the apiserver would have used; a non-Status body (a proxy's HTML, APF's plain-text
// 429) still gets a meaningful reason this way.
const REASON_BY_CODE: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  502: "BadGateway",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export function reasonForCode(code: number): string {
  return REASON_BY_CODE[code] ?? "Unknown";
}

/** Reads a Status object, or anything else the server sent, into reason and message. */
export function parseStatusBody(code: number, body: string): { reason: string; message: string } {
  try {
    const s = JSON.parse(body) as { kind?: unknown; reason?: unknown; message?: unknown };
    if (s && typeof s === "object" && s.kind === "Status") {
      const reason = typeof s.reason === "string" && s.reason !== "" ? s.reason : undefined;
      // An empty reason on a 500 stays empty-ish ("Unknown") so it is not mistaken for InternalError.
      return {
        reason: reason ?? (code === 500 ? "Unknown" : reasonForCode(code)),
        message: typeof s.message === "string" ? s.message : "",
      };
    }
  } catch {
    // not JSON: fall through to the plain-text form
  }
  return { reason: reasonForCode(code), message: body.trim().slice(0, 300) };
}

/**
 * The apiserver's Retry-After in seconds: only the integer form, which is what it sends (the
 * registry's, a point in time, is registry/retry-after.ts; the Collector's, a delay, telemetry/retry.ts).
 */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || !/^\s*\d{1,6}\s*$/.test(value)) return undefined;
  return Number(value);
}
