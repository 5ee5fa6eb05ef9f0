// One request's signal: aborted by the caller's signal or by the request's own timeout, whichever
// comes first, and let go of once the request settled (its body read included). Written by hand
// rather than `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: in Bun each of those keeps its
// timer and its listeners until it fires, so a request answered in 5 ms held its signals, and what
// they reach, for the whole request timeout; a 500-workload refresh had some 2,500 of them alive.

/** What a request signal needs of the caller's signal (a plain object in tests). */
export type ParentSignal = Pick<
  AbortSignal,
  "aborted" | "reason" | "addEventListener" | "removeEventListener"
>;

export interface RequestSignalOptions {
  /** Injected so a test can count the timers left; default the global setTimeout. */
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (timer: unknown) => void;
}

export interface RequestSignal {
  signal: AbortSignal;
  /** Whether the timeout, not the caller, aborted it. */
  timedOut(): boolean;
  /** Clears the timer and the listener on the caller's signal; safe to call more than once. */
  settle(): void;
}

/**
 * A signal for one request that aborts with the caller's reason when the caller's signal aborts,
 * or with a `TimeoutError` DOMException (the reason `AbortSignal.timeout` gives, which the callers
 * already tell from a cancellation) after `timeoutMs`.
 */
export function requestSignal(
  parent: ParentSignal,
  timeoutMs: number,
  opts: RequestSignalOptions = {},
): RequestSignal {
  const controller = new AbortController();
  let timedOut = false;
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, timedOut: () => false, settle() {} };
  }
  const clear = opts.clearTimeout ?? ((t: unknown) => clearTimeout(t as ReturnType<typeof setTimeout>));
  const onAbort = () => {
    settle();
    controller.abort(parent.reason);
  };
  const timer = (opts.setTimeout ?? setTimeout)(() => {
    timedOut = true;
    settle();
    controller.abort(new DOMException("The operation timed out.", "TimeoutError"));
  }, timeoutMs);
  let settled = false;
  function settle() {
    if (settled) return;
    settled = true;
    clear(timer);
    parent.removeEventListener("abort", onAbort);
  }
  parent.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, timedOut: () => timedOut, settle };
}

/** Runs `fn` with a request signal, settled when `fn` settles, however it ends. */
export async function withRequestSignal<T>(
  parent: ParentSignal,
  timeoutMs: number,
  fn: (rs: RequestSignal) => Promise<T>,
  opts?: RequestSignalOptions,
): Promise<T> {
  const rs = requestSignal(parent, timeoutMs, opts);
  try {
    return await fn(rs);
  } finally {
    rs.settle();
  }
}
