// Watches Prometheus' /api/v1/alerts while the scenarios run and answers, afterwards, when an
// alert with given labels was first seen firing and when it was gone again.
import type { Alert, Pipeline } from "./pipeline.ts";

export interface Seen {
  t: number;
  firing: Alert[];
}

export interface Monitor {
  seen: Seen[];
  /** The first time from `since` on that `pred` held for some firing alert; rejects after `ms`. */
  waitFor(what: string, pred: (a: Alert) => boolean, ms: number, since?: number): Promise<number>;
  /**
   * The first time from `since` on that no firing alert matched `pred`; rejects after `ms`. With
   * `hold`, it answers only once none has matched for `hold` ms from then on: an alert that one
   * failed scrape resolved (the target's series go stale) fires again at the next evaluation.
   */
  waitGone(
    what: string,
    pred: (a: Alert) => boolean,
    ms: number,
    since?: number,
    hold?: number,
  ): Promise<number>;
  stop(): Promise<void>;
}

export const matches = (a: Alert, name: string, labels: Record<string, string>) =>
  a.labels.alertname === name && Object.entries(labels).every(([k, v]) => a.labels[k] === v);

export function monitor(p: Pipeline, every = 100): Monitor {
  const seen: Seen[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const t = Date.now();
      const all = await p.alerts().catch(() => undefined);
      if (all) seen.push({ t, firing: all.filter((a) => a.state === "firing") });
      await Bun.sleep(every);
    }
  })();
  const wait = async (what: string, ok: (s: Seen) => boolean, ms: number, since = Date.now(), hold = 0) => {
    const deadline = Date.now() + ms + hold;
    for (;;) {
      const hit = held(seen, since, ok, hold);
      if (hit !== undefined) return hit;
      if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
      await Bun.sleep(50);
    }
  };
  return {
    seen,
    waitFor: (what, pred, ms, since) => wait(what, (s) => s.firing.some(pred), ms, since),
    waitGone: (what, pred, ms, since, hold) => wait(what, (s) => !s.firing.some(pred), ms, since, hold),
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/**
 * The first sample time from `since` on where `ok` holds and goes on holding for every sample
 * up to at least `hold` ms later (samples seen so far); undefined until there is one.
 */
export function held(seen: readonly Seen[], since: number, ok: (s: Seen) => boolean, hold = 0) {
  let start: number | undefined;
  for (const s of seen) {
    if (s.t < since) continue;
    if (!ok(s)) start = undefined;
    else {
      start ??= s.t;
      if (s.t - start >= hold) return start;
    }
  }
  return undefined;
}

/** Every distinct (alert, labels) seen firing in [from, to), as "Name{k=v,...}". */
export function firedBetween(seen: readonly Seen[], from: number, to: number): string[] {
  const out = new Set<string>();
  for (const s of seen)
    if (s.t >= from && s.t < to)
      for (const a of s.firing) {
        const { alertname, severity: _s, ...rest } = a.labels;
        const inner = Object.entries(rest)
          .sort(([x], [y]) => x.localeCompare(y))
          .map(([k, v]) => `${k}=${v}`)
          .join(",");
        out.add(`${alertname}{${inner}}`);
      }
  return [...out].sort();
}
