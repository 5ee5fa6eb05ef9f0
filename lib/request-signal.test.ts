import { expect, test } from "bun:test";
import { type ParentSignal, requestSignal, withRequestSignal } from "./request-signal.ts";

/** A caller's signal as a plain object that counts the listeners left on it. */
function parent() {
  const listeners = new Set<() => void>();
  const p = {
    aborted: false,
    reason: undefined as unknown,
    addEventListener: (_: string, fn: () => void) => listeners.add(fn),
    removeEventListener: (_: string, fn: () => void) => listeners.delete(fn),
    abort(reason: unknown) {
      p.aborted = true;
      p.reason = reason;
      for (const fn of [...listeners]) fn();
      listeners.clear();
    },
    listeners,
  };
  return p as typeof p & ParentSignal;
}

/** Timers that fire only when told, counting those still pending. */
function timers() {
  const pending = new Map<number, () => void>();
  let next = 0;
  return {
    setTimeout: (fn: () => void) => {
      pending.set(++next, fn);
      return next;
    },
    clearTimeout: (t: unknown) => {
      pending.delete(t as number);
    },
    fire() {
      for (const [t, fn] of [...pending]) {
        pending.delete(t);
        fn();
      }
    },
    pending,
  };
}

test("the timeout aborts with a TimeoutError, which the callers tell from a cancellation", () => {
  const p = parent();
  const t = timers();
  const rs = requestSignal(p, 5_000, t);
  expect(rs.signal.aborted).toBe(false);
  t.fire();
  expect(rs.signal.aborted).toBe(true);
  expect((rs.signal.reason as DOMException).name).toBe("TimeoutError");
  expect(rs.timedOut()).toBe(true);
  expect(p.listeners.size).toBe(0);
});

test("with the real timer, the reason is a TimeoutError too", async () => {
  const rs = requestSignal(new AbortController().signal, 1);
  const err = await new Promise<unknown>((resolve) =>
    rs.signal.addEventListener("abort", () => resolve(rs.signal.reason)),
  );
  expect((err as Error).name).toBe("TimeoutError");
});

test("the caller's abort propagates with its reason, and is no timeout", () => {
  const p = parent();
  const t = timers();
  const rs = requestSignal(p, 5_000, t);
  const why = new Error("SIGTERM");
  p.abort(why);
  expect(rs.signal.aborted).toBe(true);
  expect(rs.signal.reason).toBe(why);
  expect(rs.timedOut()).toBe(false);
  expect(t.pending.size).toBe(0);
});

test("a caller already aborted: the request's signal is aborted from the start, nothing armed", () => {
  const p = parent();
  p.abort("stopped");
  const t = timers();
  const rs = requestSignal(p, 5_000, t);
  expect(rs.signal.aborted).toBe(true);
  expect(rs.signal.reason).toBe("stopped");
  expect(t.pending.size).toBe(0);
  expect(p.listeners.size).toBe(0);
});

test("settled: no timer and no listener remain, and neither a late timeout nor abort reaches it", () => {
  const p = parent();
  const t = timers();
  const signals = Array.from({ length: 100 }, () => requestSignal(p, 5_000, t));
  expect(t.pending.size).toBe(100);
  expect(p.listeners.size).toBe(100);
  for (const rs of signals) {
    rs.settle();
    rs.settle();
  }
  expect(t.pending.size).toBe(0);
  expect(p.listeners.size).toBe(0);
  p.abort("late");
  expect(signals.some((rs) => rs.signal.aborted)).toBe(false);
});

test("withRequestSignal settles when the request ends, answered or failed", async () => {
  const p = parent();
  const t = timers();
  expect(await withRequestSignal(p, 5_000, async () => "answer", t)).toBe("answer");
  const failed = withRequestSignal(p, 5_000, async () => Promise.reject(new Error("refused")), t);
  await expect(failed).rejects.toThrow("refused");
  expect(t.pending.size).toBe(0);
  expect(p.listeners.size).toBe(0);
});
