// The pace of re-lists and re-watches: at most one start per interval (default 1 s, as
// client-go's RetryWatcher), so a server that ends or expires every watch at once is not asked
// again in a tight loop.
import { abortableSleep } from "./http.ts";

/** Waits until `minWatchIntervalMs` after `last` (at once the first time); returns the new start. */
export async function pace(
  last: number,
  opts: { minWatchIntervalMs?: number; signal: AbortSignal },
): Promise<number> {
  const wait = last + (opts.minWatchIntervalMs ?? 1000) - Date.now();
  if (wait > 0) await abortableSleep(wait, opts.signal);
  return Date.now();
}
