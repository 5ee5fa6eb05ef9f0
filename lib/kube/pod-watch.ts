// Follows the pods of one label selector the way a reflector does: LIST, then WATCH from the
// list's resourceVersion, keeping every pod as last seen, and hands the whole set to `judge`
// after each change until it returns a verdict or `signal` ends the watch. A watch that ends,
// breaks, or is answered 410 Expired is re-listed and re-watched, each at most once per
// minWatchIntervalMs (a stream of 410s never turns into a request storm).
import type { Logger } from "../log.ts";
import { ApiError } from "./errors.ts";
import { pace } from "./pace.ts";
import { type Pod, type PodApi, parsePod } from "./pods.ts";

export interface PodWatchOptions<T> {
  namespace: string;
  labelSelector: string;
  /** Ends the watch (the verification window's end, a rollout settled, the tick stopped). */
  signal: AbortSignal;
  log: Logger;
  /** Called with every pod after the list and after each change; a verdict ends the watch. */
  judge(pods: Pod[]): T | undefined;
  minWatchIntervalMs?: number;
  /** Upper bound of one watch request's timeoutSeconds; default 300. */
  maxWatchSeconds?: number;
}

/** The first verdict `judge` gave, or undefined once `signal` ended the watch without one. */
export async function watchPods<T>(api: PodApi, opts: PodWatchOptions<T>): Promise<T | undefined> {
  const w = new PodWatcher(api, opts);
  try {
    return await w.run();
  } catch (e) {
    if (opts.signal.aborted) return undefined;
    throw e;
  }
}

class PodWatcher<T> {
  private readonly pods = new Map<string, Pod>();
  private lastList = Number.NEGATIVE_INFINITY;
  private lastWatch = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly api: PodApi,
    private readonly opts: PodWatchOptions<T>,
  ) {}

  async run(): Promise<T | undefined> {
    for (;;) {
      try {
        this.lastList = await pace(this.lastList, this.opts);
        const listed = await this.api.list(this.opts.namespace, this.opts.labelSelector);
        this.pods.clear();
        for (const p of listed.items) this.pods.set(p.uid || p.name, p);
        const verdict = this.opts.judge([...this.pods.values()]);
        if (verdict !== undefined) return verdict;
        const found = await this.watchFrom(listed.resourceVersion);
        if (found !== undefined) return found;
      } catch (e) {
        if (this.opts.signal.aborted) return undefined;
        // A transient failure or a broken stream re-lists (paced); anything else is the caller's.
        if (!(e instanceof ApiError) || !(e.transient || e.code === 410 || e.reason === "NetworkError"))
          throw e;
        this.opts.log.debug(`re-listing pods ${this.opts.labelSelector} after ${e.reason}`, { code: e.code });
      }
    }
  }

  /** Watches from `rv`, re-watching after a clean end; undefined means re-list. */
  private async watchFrom(rv: string): Promise<T | undefined> {
    for (;;) {
      this.lastWatch = await pace(this.lastWatch, this.opts);
      const step = await this.watchOnce(rv);
      if (step.verdict !== undefined) return step.verdict;
      if (step.relist) return undefined;
      rv = step.rv;
    }
  }

  private async watchOnce(rv: string): Promise<{ verdict?: T; relist?: boolean; rv: string }> {
    const events = this.api.watch(this.opts.namespace, {
      labelSelector: this.opts.labelSelector,
      resourceVersion: rv,
      timeoutSeconds: this.opts.maxWatchSeconds ?? 300,
      signal: this.opts.signal,
    });
    const req = { method: "GET" as const, path: `pods in ${this.opts.namespace}`, target: "pod watch" };
    for await (const ev of events) {
      if (ev.type === "BOOKMARK") {
        rv = bookmarkVersion(ev.object) ?? rv;
        continue;
      }
      if (ev.type === "ERROR") {
        const code = (ev.object as { code?: unknown }).code;
        this.opts.log.debug(`pod watch ${this.opts.labelSelector} ended with an error event`, { code });
        return { relist: true, rv };
      }
      const pod = parsePod(req, ev.object);
      rv = bookmarkVersion(ev.object) ?? rv;
      if (ev.type === "DELETED") this.pods.delete(pod.uid || pod.name);
      else this.pods.set(pod.uid || pod.name, pod);
      const verdict = this.opts.judge([...this.pods.values()]);
      if (verdict !== undefined) return { verdict, rv };
    }
    return { rv };
  }
}

function bookmarkVersion(object: unknown): string | undefined {
  const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === "string" && rv !== "" ? rv : undefined;
}
