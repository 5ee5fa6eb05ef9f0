// The metric half of the Telemetry interface. Instruments are created on first use from the
// shared METRICS list, so a name the list does not know, or a counter recorded as a gauge, is
// reported once instead of silently creating a series no dashboard reads.
import type { Counter, Gauge, Histogram, Meter } from "@opentelemetry/api";
import type { Attributes, MetricName, Telemetry } from "../telemetry.ts";
import { METRICS, type MetricDef, type MetricKind } from "./metrics.ts";

type Instrument = Counter | Gauge | Histogram;
type Metrics = Pick<Telemetry, "counter" | "gauge" | "histogram">;

function create(meter: Meter, def: MetricDef): Instrument {
  const opts = { unit: def.unit, description: def.description };
  if (def.kind === "counter") return meter.createCounter(def.name, opts);
  if (def.kind === "gauge") return meter.createGauge(def.name, opts);
  return meter.createHistogram(def.name, {
    ...opts,
    advice: def.buckets ? { explicitBucketBoundaries: [...def.buckets] } : undefined,
  });
}

/**
 * `base` (the state object's namespace and name) goes on every point so that series of different
 * state objects stay apart even where resource attributes are not turned into labels.
 */
export function createMetrics(meter: Meter, base: Attributes, warn: (msg: string) => void): Metrics {
  const instruments = new Map<MetricName, Instrument>();
  const reported = new Set<string>();
  const record = (kind: MetricKind, name: MetricName, value: number, attrs: Attributes) => {
    const def: MetricDef | undefined = METRICS.find((m) => m.name === name);
    if (!def || def.kind !== kind || !Number.isFinite(value)) {
      const key = `${kind}:${name}`;
      if (!reported.has(key)) warn(`telemetry: cannot record ${name} as a ${kind} (value ${value}); dropped`);
      reported.add(key);
      return;
    }
    const inst = instruments.get(name) ?? create(meter, def);
    instruments.set(name, inst);
    const all = { ...base, ...attrs };
    if (kind === "counter") (inst as Counter).add(value, all);
    else (inst as Gauge | Histogram).record(value, all);
  };
  return {
    counter: (name, value, attrs) => record("counter", name, value, attrs),
    gauge: (name, value, attrs) => record("gauge", name, value, attrs),
    histogram: (name, value, attrs) => record("histogram", name, value, attrs),
  };
}
