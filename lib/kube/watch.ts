// Watch stream framing: the apiserver writes one JSON event per line (Go's json.Encoder), and a
// chunk may hold half an event or several. Hand-written because it is ten lines of buffering.

export interface WatchEvent {
  type: string;
  object: unknown;
}

export class WatchFramingError extends Error {
  override name = "WatchFramingError";
}

export async function* watchEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<WatchEvent> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) yield parseEvent(line);
        nl = buffer.indexOf("\n");
      }
      if (done) break;
    }
    if (buffer.trim()) yield parseEvent(buffer.trim());
  } finally {
    // Stopping early (a settled rollout) must release the connection, not leave it streaming.
    await reader.cancel().catch(() => {});
  }
}

function parseEvent(line: string): WatchEvent {
  let ev: unknown;
  try {
    ev = JSON.parse(line);
  } catch {
    throw new WatchFramingError(`watch stream carried a line that is not JSON (${line.length} bytes)`);
  }
  const { type, object } = (ev ?? {}) as { type?: unknown; object?: unknown };
  if (typeof type !== "string" || typeof object !== "object" || object === null) {
    throw new WatchFramingError("watch stream carried an event without type and object");
  }
  return { type, object };
}
