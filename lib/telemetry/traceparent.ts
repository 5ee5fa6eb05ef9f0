// The W3C trace context's traceparent header, as the store keeps it beside each attempt: the
// tracing layer links to it, and the tick links its story through it. Its own file, so a reader
// of a stored value needs nothing of the telemetry interface.

/** Parses a W3C traceparent; undefined when it is not one (a stored value is never trusted blindly). */
export function parseTraceparent(
  value: string | undefined,
): { traceId: string; spanId: string; flags: string } | undefined {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value ?? "");
  if (!m || /^0+$/.test(m[1] as string) || /^0+$/.test(m[2] as string)) return undefined;
  return { traceId: m[1] as string, spanId: m[2] as string, flags: m[3] as string };
}
