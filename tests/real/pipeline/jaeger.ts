// A real Jaeger v2 (peers/jaeger: github.com/jaegertracing/jaeger's cmd/jaeger, built by
// peers/build.sh into the peers cache keyed by its go.sum) with in-memory storage: OTLP/gRPC in
// from the pipeline's Collector (its otlp_grpc/traces exporter), the query service's HTTP API out,
// every port on 127.0.0.1 and its own metrics off. Stops with the test (processes.ts watchdog).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { peer } from "../peers.ts";
import { freePort, type Peer, spawnPeer, waitReady } from "../processes.ts";

/** A span as Jaeger's query API (/api/traces) returns it: the fields the test reads. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: "CHILD_OF" | "FOLLOWS_FROM"; traceID: string; spanID: string }>;
  tags: Array<{ key: string; value: unknown }>;
  logs: Array<{ fields: Array<{ key: string; value: unknown }> }>;
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: Array<{ key: string; value: unknown }> }>;
}

export interface Jaeger {
  /** host:port of its OTLP/gRPC receiver. */
  otlpGrpc: string;
  /** GET on its query API, e.g. `/api/traces?service=...`; the `data` of the answer. */
  api<T>(path: string): Promise<T>;
  peer: Peer;
}

function config(ports: { otlp: number; http: number; grpc: number }) {
  return {
    service: {
      extensions: ["jaeger_storage", "jaeger_query"],
      pipelines: {
        traces: { receivers: ["otlp"], processors: ["batch"], exporters: ["jaeger_storage_exporter"] },
      },
      telemetry: { metrics: { level: "none" }, logs: { level: "warn" } },
    },
    extensions: {
      jaeger_query: {
        storage: { traces: "memstore" },
        http: { endpoint: `127.0.0.1:${ports.http}` },
        grpc: { endpoint: `127.0.0.1:${ports.grpc}` },
      },
      jaeger_storage: { backends: { memstore: { memory: { max_traces: 10000 } } } },
    },
    receivers: { otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${ports.otlp}` } } } },
    processors: { batch: {} },
    exporters: { jaeger_storage_exporter: { trace_storage: "memstore" } },
  };
}

export async function startJaeger(dir: string): Promise<Jaeger> {
  const ports = { otlp: await freePort(), http: await freePort(), grpc: await freePort() };
  const file = join(dir, "jaeger.json");
  writeFileSync(file, JSON.stringify(config(ports), null, 2));
  const p = spawnPeer("jaeger", [peer("jaeger", "jaeger"), "--config", file], { dir, hardLimitS: 900 });
  const base = `http://127.0.0.1:${ports.http}`;
  const api = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${base}${path}`);
    const body = (await r.json()) as { data: T; errors?: unknown };
    if (!r.ok || body.errors) throw new Error(`Jaeger ${path}: ${r.status} ${JSON.stringify(body.errors)}`);
    return body.data;
  };
  await waitReady(p, () => fetch(`${base}/api/services`).then((r) => r.ok), 60_000);
  return { otlpGrpc: `127.0.0.1:${ports.otlp}`, api, peer: p };
}
