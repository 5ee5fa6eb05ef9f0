// At most `limit` calls in flight; the rest wait in order. Bun's fetch keeps a connection per
// request in flight (up to 256 to one host), so bounding the requests bounds the connections, and
// keep-alive hands each freed connection to the next request in line.

export type Bounded = <T>(fn: () => Promise<T>) => Promise<T>;

export function bounded(limit: number): Bounded {
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`a bound must be a positive integer, not ${limit}`);
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    running--;
    waiting.shift()?.();
  };
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await fn();
    } finally {
      release();
    }
  };
}
