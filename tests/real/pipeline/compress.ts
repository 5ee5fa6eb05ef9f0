// Time compression for the real pipeline: every interval of the real setup divided by FACTOR.
// A CronJob tick every 5 minutes becomes one every 2.5 s; Prometheus' scrape and rule
// evaluation (1 minute, its defaults) become 0.5 s; the Collector's 1h metric_expiration and
// max_stale become 30 s; an alert's 30m becomes 15 s. The shipped rules and collector config are
// loaded with their durations divided the same way and nothing else changed but addresses.

/** Real seconds per test second. */
export const FACTOR = 120;
/** The CronJob schedule (k8s/base/cronjob.yaml) and Prometheus' default intervals, real seconds. */
export const REAL = { tick: 300, scrape: 60, evaluation: 60, lookbackDelta: 300 } as const;

/** Test milliseconds for a real duration in seconds. */
export const ms = (realSeconds: number): number => (realSeconds * 1000) / FACTOR;
/** A real duration in minutes, in test milliseconds. */
export const minutes = (m: number): number => ms(m * 60);

const UNIT_S: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

/** Seconds in a Prometheus/Go duration literal such as 30m, 1h, 7d (one unit only). */
export function seconds(literal: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w|y)$/.exec(literal.trim());
  if (!m) throw new Error(`Cannot scale duration ${literal}: expected one number and one unit`);
  return Number(m[1]) * (UNIT_S[m[2] as string] as number);
}

/** The compressed form of a duration literal, in whole milliseconds (PromQL and Go accept `ms`). */
export function scaled(literal: string): string {
  return `${Math.round((seconds(literal) * 1000) / FACTOR)}ms`;
}

/**
 * A PromQL expression with every duration compressed: range selectors and subqueries
 * (`[7d]`, `[1h:5m]`), `offset 2h`, and, in an expression that reads `time()`, the seconds it
 * compares with `<`, `>`, `<=` or `>=` (`> 2 * 3600`, `> 1800`, `< 3600`: every such literal
 * there is a time difference). `==` and the thresholds of expressions without `time()` are counts
 * (`>= 8`, `== 1`) and are left alone.
 */
export function scaleExpr(expr: string): string {
  const out = expr
    .replace(/\[(\d+(?:ms|s|m|h|d|w|y))(?::(\d+(?:ms|s|m|h|d|w|y))?)?\]/g, (_, r: string, step?: string) =>
      step ? `[${scaled(r)}:${scaled(step)}]` : `[${scaled(r)}]`,
    )
    .replace(/\boffset (\d+(?:ms|s|m|h|d|w|y))/g, (_, d: string) => `offset ${scaled(d)}`);
  if (!out.includes("time()")) return out;
  return out.replace(
    /([<>]=?) (\d+)(?: \* (\d+))?(?![\d.*])/g,
    (_, op: string, a: string, b?: string) => `${op} ${(Number(a) * Number(b ?? 1)) / FACTOR}`,
  );
}

interface Rule {
  expr: string;
  for?: string;
  [k: string]: unknown;
}

/** rules.yaml's groups with every expression and `for` compressed. */
export function scaleRules(doc: { groups: Array<{ name: string; rules: Rule[] }> }) {
  return {
    groups: doc.groups.map((g) => ({
      ...g,
      rules: g.rules.map((r) => ({
        ...r,
        expr: scaleExpr(r.expr),
        ...(r.for ? { for: scaled(r.for) } : {}),
      })),
    })),
  };
}
