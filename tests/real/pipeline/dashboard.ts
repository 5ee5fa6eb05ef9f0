// Runs every PromQL query of k8s/monitoring/dashboard.json (its durations compressed like the
// rules') against the pipeline's Prometheus while the scenarios run, and keeps, per query,
// whether it ever returned data, whether it errored, and the series names it reads that
// Prometheus does not hold. A panel whose targets are not PromQL (the traces panel: a Jaeger
// search) is not evaluated here; notEvaluated() names it, and jaegerSearch() turns it into the
// request Grafana's Jaeger data source makes, which jaeger.test.ts sends to a real Jaeger.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { scaleExpr } from "./compress.ts";
import { MONITORING } from "./configs.ts";
import type { Pipeline } from "./pipeline.ts";

interface Target {
  panel: string;
  expr: string;
}

export interface Dashboard {
  targets: Target[];
  /** Runs every query once now. */
  sample(): Promise<void>;
  errors(): string[];
  unknownSeries(): string[];
  empty(): string[];
  stop(): void;
}

interface Panel {
  title: string;
  targets?: Array<{
    expr?: string;
    queryType?: string;
    datasource?: { type?: string };
    service?: string;
    operation?: string;
    tags?: string;
    limit?: number;
  }>;
}
const panels = () =>
  (JSON.parse(readFileSync(join(MONITORING, "dashboard.json"), "utf8")) as { panels: Panel[] }).panels;

/** Panels with a query that is not PromQL, as "title (datasource, query type)". */
export function notEvaluated(): string[] {
  return panels().flatMap((p) =>
    (p.targets ?? [])
      .filter((t) => !t.expr)
      .map((t) => `${p.title} (${t.datasource?.type ?? "?"}, ${t.queryType ?? "?"})`),
  );
}

export function dashboardTargets(): Target[] {
  return panels().flatMap((p) =>
    (p.targets ?? []).filter((t) => t.expr).map((t) => ({ panel: p.title, expr: t.expr as string })),
  );
}

/** Metric names an expression reads (identifiers followed by `{`, `[` or `)` that are not functions). */
export function seriesNames(expr: string): string[] {
  const names = expr.match(/\b(image_refresh_[a-z0-9_]+|kube_[a-z0-9_]+)\b(?!\s*=)/g) ?? [];
  return [...new Set(names.filter((n) => !/^image_refresh_(image|outcome|installation)$/.test(n)))];
}

export function dashboardProbe(p: Pipeline, every = 3000): Dashboard {
  const targets = dashboardTargets();
  const data = new Set<Target>();
  const errs = new Map<Target, string>();
  const held = new Set<string>();
  const sample = async () => {
    for (const t of targets) {
      try {
        if ((await p.query(scaleExpr(t.expr))).length > 0) data.add(t);
      } catch (err) {
        errs.set(t, (err as Error).message);
      }
    }
    const names = (await fetch(`http://127.0.0.1:${p.ports.prometheus}/api/v1/label/__name__/values`)
      .then((r) => r.json())
      .catch(() => ({ data: [] }))) as { data: string[] };
    for (const n of names.data) held.add(n);
  };
  const timer = setInterval(() => void sample(), every);
  const name = (t: Target) => `${t.panel}: ${t.expr}`;
  return {
    targets,
    sample,
    errors: () => [...errs].map(([t, e]) => `${name(t)}: ${e}`),
    unknownSeries: () =>
      targets.flatMap((t) =>
        seriesNames(t.expr)
          .filter((n) => !held.has(n))
          .map((n) => `${t.panel}: ${n}`),
      ),
    empty: () => targets.filter((t) => !data.has(t)).map(name),
    stop: () => clearInterval(timer),
  };
}

/** `k=v k2="v 2"` (logfmt, as Grafana's Jaeger query editor takes tags) as an object. */
export function logfmt(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([^\s=]+)=(?:"((?:[^"\\]|\\.)*)"|(\S*))/g))
    out[m[1] as string] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "");
  return out;
}

/**
 * The traces panel's query as Grafana's Jaeger data source sends it (GET /api/traces with
 * service, operation, tags as JSON, limit), its dashboard variables replaced by `vars`.
 */
export function jaegerSearch(vars: Record<string, string>): string {
  const targets = panels().flatMap((p) => (p.targets ?? []).filter((t) => t.datasource?.type === "jaeger"));
  if (targets.length !== 1) throw new Error(`Cannot find the traces panel: ${targets.length} Jaeger targets`);
  const t = targets[0] as NonNullable<Panel["targets"]>[number];
  const fill = (s = "") => s.replace(/\$(\w+)/g, (_, v: string) => vars[v] ?? `$${v}`);
  const q = new URLSearchParams({ service: fill(t.service), operation: fill(t.operation) });
  q.set("tags", JSON.stringify(logfmt(fill(t.tags))));
  q.set("limit", String(t.limit ?? 20));
  return `/api/traces?${q}`;
}
