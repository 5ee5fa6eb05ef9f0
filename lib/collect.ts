// A full collection every COLLECT_EVERY API requests of a tick. Bun collects when its heap grows,
// not when RSS does: a refresh of 500 workloads reads some 3,000 answers, and the garbage of
// hundreds of them (each answer's bytes and the objects parsed from them) piled up before a
// collection came, and peak RSS with it. A collection at a fixed count of requests bounds the pile.

/**
 * Requests between two collections. A 500-workload refresh collects 15 times at 200, for 58-82 ms
 * of CPU, and peaks at 59.5 MB (67.0 without); every 100, 30 times for 127-150 ms and 58.3 MB;
 * every 400, 7 times for 33-46 ms and 61.9 MB, 2 MB less headroom under the 64 MB budget. A
 * 500-workload no-op collects twice (5-7 ms); a tick of a handful of workloads never does.
 */
export const COLLECT_EVERY = 200;

/** Bun's synchronous full collection. */
export const fullCollection = (): void => {
  Bun.gc(true);
};

/** Counts requests; `collect` runs on every `every`th. */
export function collector(collect: () => void = fullCollection, every = COLLECT_EVERY): () => void {
  if (!Number.isInteger(every) || every < 1)
    throw new Error(
      `Cannot count requests between collections: current value is ${every}, expected a whole number of at least 1`,
    );
  let requests = 0;
  return () => {
    requests++;
    if (requests % every === 0) collect();
  };
}
