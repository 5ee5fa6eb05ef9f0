// A recording pass-through in front of a plain-HTTP registry, so a test can see which
// Authorization headers reached the registry (distribution does not log them).
export interface ProxiedRequest {
  method: string;
  path: string;
  authorization?: string;
}

export interface RecordingProxy {
  endpoint: string;
  requests: ProxiedRequest[];
  stop(): void;
}

export function startRecordingProxy(upstream: string): RecordingProxy {
  const requests: ProxiedRequest[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const authorization = req.headers.get("authorization") ?? undefined;
      requests.push({ method: req.method, path: url.pathname, authorization });
      const headers = new Headers(req.headers);
      headers.delete("host");
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const res = await fetch(`${upstream}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(10_000),
      });
      const out = new Headers(res.headers);
      out.delete("content-encoding"); // fetch has already decoded the body
      return new Response(req.method === "HEAD" ? null : await res.arrayBuffer(), {
        status: res.status,
        headers: out,
      });
    },
  });
  const guard = setTimeout(() => server.stop(true), 120_000);
  guard.unref();
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    requests,
    stop() {
      clearTimeout(guard);
      server.stop(true);
    },
  };
}
