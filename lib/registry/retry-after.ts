// A 429's Retry-After as a point in time (RFC 9110 §10.2.3): either delay-seconds or an
// HTTP-date. Seconds count from the response's own Date when it has one (else from now), so the
// time is on the registry's clock; `delayMs` is the wait measured from that Date, for a caller
// that keeps time on another server's clock (the tick stores times on the API server's).

export interface RetryAfter {
  /** When the registry may be called again. */
  at: Date;
  /** The wait the registry asked for, measured from its response (never negative). */
  delayMs: number;
}

const SECONDS = /^\d{1,10}$/;

/** Parses an HTTP-date (IMF-fixdate and the two obsolete forms Date.parse also reads). */
function httpDate(value: string): number | undefined {
  // A bare number or ISO string is not an HTTP-date even though Date.parse may accept it.
  if (!/^[A-Za-z]{3},? /.test(value) && !/^[A-Za-z]{6,9}, /.test(value)) return undefined;
  const t = Date.parse(value);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * The parsed Retry-After, or undefined when absent or unreadable. `date` is the response's Date
 * header; `now` (this process's clock, ms) stands in for it when it is missing or unreadable.
 */
export function retryAfterTime(
  value: string | undefined,
  date: string | undefined,
  now: number,
): RetryAfter | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const sent = (date ? httpDate(date.trim()) : undefined) ?? now;
  if (SECONDS.test(v)) return { at: new Date(sent + Number(v) * 1000), delayMs: Number(v) * 1000 };
  const until = httpDate(v);
  if (until === undefined) return undefined;
  return { at: new Date(until), delayMs: Math.max(0, until - sent) };
}
