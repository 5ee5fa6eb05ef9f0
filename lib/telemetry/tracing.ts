// The span half of the Telemetry interface on top of an OpenTelemetry tracer. Parenting relies
// on the global context manager (AsyncLocalStorage under Bun, registered by exporter.ts): the
// tick and the HTTP layers never pass spans around, they just call span() inside tick().
import {
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { Attributes, SpanHandle, SpanIds, Telemetry } from "../telemetry.ts";
import { parseTraceparent } from "./traceparent.ts";

export const ROOT_SPAN_NAME = "image-refresh tick";

type Tracing = Pick<Telemetry, "tick" | "command" | "linkRoot" | "span" | "activeIds" | "rootTraceparent">;

interface Handle extends SpanHandle {
  readonly failed: boolean;
}

function handleFor(span: Span): Handle {
  let failed = false;
  let ended = false;
  return {
    get failed() {
      return failed;
    },
    setAttributes: (attrs) => void span.setAttributes(attrs),
    addEvent: (name, attrs) => void span.addEvent(name, attrs),
    setError(type, message) {
      failed = true;
      span.setAttribute("error.type", type);
      span.setStatus({ code: SpanStatusCode.ERROR, message });
    },
    end() {
      if (!ended) span.end();
      ended = true;
    },
  };
}

/** Runs fn with `span` active; an escaping error marks the span unless fn already did. */
async function runIn<T>(span: Span, parent: Context, fn: (h: SpanHandle) => Promise<T>): Promise<T> {
  const h = handleFor(span);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(h));
  } catch (err) {
    if (!h.failed)
      h.setError(err instanceof Error ? err.name : "Error", err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    h.end();
  }
}

function idsOf(sc: SpanContext): SpanIds {
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
  return { traceId: sc.traceId, spanId: sc.spanId, traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}` };
}

function linkFor(traceparent: string): Link | undefined {
  const p = parseTraceparent(traceparent);
  if (!p) return undefined;
  return {
    context: {
      traceId: p.traceId,
      spanId: p.spanId,
      traceFlags: Number.parseInt(p.flags, 16) & 1,
      isRemote: true,
    },
  };
}

/** `fallback` answers activeIds() before any span exists, e.g. for a log line before the tick. */
export function createTracing(tracer: Tracer, fallback: SpanIds): Tracing {
  let root: Span | undefined;
  const pending: Link[] = [];
  const linkRoot = (traceparents: readonly string[]) => {
    const own = root?.spanContext();
    for (const tp of traceparents) {
      const link = linkFor(tp);
      // A stored traceparent is read back by the tick that wrote it only on a re-read; skip self-links.
      if (!link || (own && link.context.traceId === own.traceId && link.context.spanId === own.spanId))
        continue;
      if (root) root.addLink(link);
      else pending.push(link);
    }
  };
  const command = <T>(name: string, attrs: Attributes, fn: (h: SpanHandle) => Promise<T>): Promise<T> => {
    // A fresh trace per process: stories across ticks are told with links, never with parents.
    root = tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL, attributes: attrs, root: true, links: pending.splice(0) },
      ROOT_CONTEXT,
    );
    return runIn(root, ROOT_CONTEXT, fn);
  };
  return {
    tick: (attrs, fn) => command(ROOT_SPAN_NAME, attrs, fn),
    command,
    linkRoot,
    span(name, opts, fn) {
      const parent = context.active();
      const kind = opts.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL;
      return runIn(
        tracer.startSpan(name, { kind, attributes: opts.attributes as Attributes | undefined }, parent),
        parent,
        fn,
      );
    },
    activeIds() {
      const span = trace.getSpan(context.active()) ?? root;
      return span ? idsOf(span.spanContext()) : fallback;
    },
    rootTraceparent: () => (root ? idsOf(root.spanContext()).traceparent : fallback.traceparent),
  };
}
