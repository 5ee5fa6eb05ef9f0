// The tests' own HTTPS client for the real API server (the fake kubelet and the stories' set-up
// and assertions): fetch with the run's CA and a bearer token, JSON in and out, no retries, so a
// status the server returns is the status a test sees.
export interface ApiResponse {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: API objects are read loosely by tests
  body: any;
}

export interface Api {
  server: string;
  token: string;
  caPem: string;
  request(
    method: string,
    path: string,
    opts?: { body?: unknown; contentType?: string },
  ): Promise<ApiResponse>;
  /** GET that must succeed; returns the object. */
  // biome-ignore lint/suspicious/noExplicitAny: see ApiResponse
  get(path: string): Promise<any>;
}

export function apiClient(server: string, token: string, caPem: string): Api {
  const api: Api = {
    server,
    token,
    caPem,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${token}`,
        accept: "application/json",
      };
      if (opts.body !== undefined) headers["content-type"] = opts.contentType ?? "application/json";
      const res = await fetch(`${server}${path}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        tls: { ca: caPem },
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: res.status, body };
    },
    async get(path) {
      const r = await api.request("GET", path);
      if (r.status !== 200) throw new Error(`Cannot GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
  };
  return api;
}

/** Fails with the server's answer unless the status is one of `ok`. */
export function expectStatus(r: ApiResponse, what: string, ok: number[] = [200, 201]): ApiResponse {
  if (!ok.includes(r.status)) throw new Error(`Cannot ${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}
