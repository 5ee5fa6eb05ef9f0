// When to send an OTLP request again, as a pure function of what went wrong, how often, and how
// much of the flush budget is left. The OTLP/HTTP spec makes 429, 502, 503 and 504 retryable,
// with exponential backoff and jitter, and Retry-After honoured; we add a refused or reset
// connection. A tick lives seconds and every process exits after one flush, so the bounds are
// ours: a collector that is down costs a few hundred milliseconds, not the whole 5 s budget.

/** What one attempt ended with, as far as retrying cares. */
export type Failure =
  | { kind: "status"; status: number; retryAfterMs?: number }
  /** No HTTP answer at all: connection refused or reset, DNS failure. */
  | { kind: "network" }
  /** The per-request timeout fired: the collector hangs; asking again cannot finish in time. */
  | { kind: "timeout" };

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** Attempts in all, per kind. A collector that refuses connections is not back in 300 ms. */
const MAX_ATTEMPTS = { status: 5, network: 3 } as const;
/** First backoff; doubles per attempt (100, 200, 400, 800 ms before jitter). */
const BASE_DELAY_MS = 100;
/** A retry that cannot get at least this long for its own request is not worth starting. */
export const MIN_REQUEST_MS = 50;

/**
 * Milliseconds to wait before attempt `attempt + 1`, or undefined to give up. `attempt` counts
 * from 1 (the attempt that just failed); `random` is in [0, 1). Jitter keeps the delay between
 * half and all of the exponential step, so synchronized CronJobs do not retry in lockstep.
 */
export function retryDelay(
  failure: Failure,
  attempt: number,
  opts: { remainingMs: number; random: number },
): number | undefined {
  if (failure.kind === "timeout") return undefined;
  if (failure.kind === "status" && !RETRYABLE_STATUSES.has(failure.status)) return undefined;
  if (attempt >= MAX_ATTEMPTS[failure.kind]) return undefined;
  const step = BASE_DELAY_MS * 2 ** (attempt - 1);
  const backoff = step / 2 + (step / 2) * opts.random;
  const delay =
    failure.kind === "status" && failure.retryAfterMs !== undefined ? failure.retryAfterMs : backoff;
  // Never past the flush deadline: a wait that leaves no room for the request is a give-up now.
  return delay + MIN_REQUEST_MS <= opts.remainingMs ? Math.round(delay) : undefined;
}

/** An OTLP receiver's Retry-After as a delay: delay-seconds or an HTTP-date (RFC 9110), in ms from `now`; undefined when absent or malformed. */
export function retryAfterDelayMs(value: string | null | undefined, now: number): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Date.parse reads "-1" and "1.5" as dates; an HTTP-date always names its month.
  const at = /[a-z]/i.test(v) ? Date.parse(v) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
