// The one HTTP layer for the API server: per-request timeout joined with the tick's signal
// (request-signal.ts), TLS verified against the cluster CA, the token re-read per request, bounded
// retries of reads, one client span per attempt. The token lives only in the Authorization header it builds.
import { readFileSync } from "node:fs";
import { type Bounded, bounded } from "../bounded.ts";
import { collector } from "../collect.ts";
import type { Logger } from "../log.ts";
import { withRequestSignal } from "../request-signal.ts";
import { scrub } from "../scrub.ts";
import { mark } from "../startup-timing.ts";
import type { SpanHandle, Telemetry } from "../telemetry.ts";
import { VERSION } from "../version.ts";
import { ApiError, parseStatusBody, retryAfterSeconds } from "./errors.ts";
import type { ExecCredential } from "./exec.ts";
import { type ExecAuthenticator, ExecPluginError, execAuthenticator } from "./exec-run.ts";
import type { Connection } from "./kubeconfig.ts";

export interface HttpOptions {
  requestTimeoutMs: number;
  /** The tick's own deadline; aborting it ends every request and every wait. */
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  fetch?: typeof fetch;
  readFile?: (p: string) => string;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Retries of a GET on a transient error; writes are never retried. */
  maxRetries?: number;
  /** Ceiling on one honoured Retry-After: a CronJob tick cannot wait out a 32 s APF back-off. */
  maxRetryAfterMs?: number;
  /** Requests (hence connections) in flight at once, watches aside; default MAX_IN_FLIGHT. */
  maxInFlight?: number;
  /** Run once every COLLECT_EVERY requests settled (collect.ts); default Bun's full collection. */
  collect?: () => void;
}

/**
 * A tick over hundreds of workloads reads them all at once; unbounded, each read opens its own
 * TCP and TLS connection, costing the API server and the tick CPU for every handshake.
 */
export const MAX_IN_FLIGHT = 8;

export interface KubeRequest {
  method: "GET" | "PATCH" | "POST";
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  contentType?: string;
  /** Names the object in error messages, e.g. `Deployment apps/api` (describeWorkload). */
  target: string;
  /** Sees the headers of each answer (the last call is the answer returned): the server's `Date`. */
  onHeaders?: (headers: Headers) => void;
}

export interface KubeHttp {
  /** Sends the request and returns the parsed JSON body; GETs are retried on transient errors. */
  json(req: KubeRequest): Promise<unknown>;
  /** For watches: the timeout bounds only the wait for headers; `signal` bounds the stream. */
  stream(req: KubeRequest, signal: AbortSignal): Promise<ReadableStream<Uint8Array>>;
  /**
   * Sends a GET now, whose answer (or error) the next json() of the same method, path and query
   * takes, once, with its headers: a tick's first read goes out while the rest of the tick is
   * still loading. Only for a request the caller is about to make anyway: an answer no one takes
   * would be a read the tick did not need.
   */
  prefetch(req: KubeRequest): void;
}

interface Early {
  answer: Promise<unknown>;
  headers?: Headers;
}

const requestKey = (req: KubeRequest) => `${req.method} ${req.path} ${JSON.stringify(req.query ?? {})}`;

const readUtf8 = (p: string) => readFileSync(p, "utf8");

export const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(t);
      reject(signal.reason);
    }
    signal.addEventListener("abort", onAbort, { once: true });
  });

export function createKubeHttp(conn: Connection, opts: HttpOptions): KubeHttp {
  const ctx = new HttpContext(conn, opts);
  return {
    json: (req) => ctx.json(req),
    stream: (req, signal) => ctx.stream(req, signal),
    prefetch: (req) => ctx.prefetch(req),
  };
}

interface Attempt {
  req: KubeRequest;
  resend: number;
  signal: AbortSignal;
  /** Whether the request's own timeout (not the tick) aborted it. */
  timedOut: () => boolean;
  /** The plugin credential this request last sent, so a 401 invalidates that one and no other. */
  used?: { cred?: ExecCredential };
}

class HttpContext {
  private lastToken: string | undefined;
  private readonly fetch: typeof fetch;
  private readonly tls: BunFetchRequestInitTLS;
  private readonly exec: ExecAuthenticator | undefined;
  private readonly early = new Map<string, Early>();
  /**
   * Every json() attempt waits here for one of MAX_IN_FLIGHT slots; a watch does not: it holds
   * its connection for a whole rollout and would starve the reads behind it. Watches open
   * connections of their own, one per rollout being waited on.
   */
  private readonly slot: Bounded;
  /** Counts each request once it settled: its answer is garbage by the collection it may start. */
  private readonly settled: () => void;

  constructor(
    private readonly conn: Connection,
    private readonly opts: HttpOptions,
  ) {
    this.fetch = opts.fetch ?? fetch;
    this.slot = bounded(opts.maxInFlight ?? MAX_IN_FLIGHT);
    this.settled = collector(opts.collect);
    this.lastToken = conn.token;
    // A CA given replaces the default roots; verification is off only when the kubeconfig says so.
    this.tls = {
      ca: conn.caPem,
      cert: conn.clientCertPem,
      key: conn.clientKeyPem,
      rejectUnauthorized: !conn.insecureSkipTlsVerify,
    };
    this.exec = conn.exec
      ? execAuthenticator(conn.exec, {
          server: conn.server,
          caPem: conn.caPem,
          insecureSkipTlsVerify: conn.insecureSkipTlsVerify,
        })
      : undefined;
  }

  prefetch(req: KubeRequest): void {
    if (req.method !== "GET") throw new Error(`only a GET can be sent early, not ${req.method} ${req.path}`);
    const early: Early = { answer: Promise.resolve() };
    early.answer = this.json({
      ...req,
      onHeaders: (h) => {
        early.headers = h;
      },
    });
    // Taken by the json() that follows; until then a failure must not count as unhandled.
    early.answer.catch(() => {});
    this.early.set(requestKey(req), early);
  }

  async json(req: KubeRequest): Promise<unknown> {
    const key = requestKey(req);
    const early = this.early.get(key);
    if (early) {
      this.early.delete(key);
      try {
        return await early.answer;
      } finally {
        if (early.headers) req.onHeaders?.(early.headers);
      }
    }
    const maxRetries = req.method === "GET" ? (this.opts.maxRetries ?? 2) : 0;
    let authRetried = false;
    let retries = 0;
    const started = performance.now();
    const used: { cred?: ExecCredential } = {};
    for (let resend = 0; ; resend++) {
      try {
        // The timeout starts once the request has its slot: a queue of 500 reads is no timeout.
        return await this.slot(() =>
          this.withTimeout(req, resend, (a, span) => this.complete({ ...a, used }, span)),
        );
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        // A 401 was rejected before anything happened, so even a write may be re-sent once,
        // with a token freshly read from a rotating file.
        // An exec plugin is run again for the resend (client-go re-runs it on a 401 too).
        if (e.code === 401 && (this.conn.tokenFile || this.exec) && !authRetried) {
          authRetried = true;
          // Only the credential this request sent: a concurrent request's 401 with an older one
          // must not throw away the credential another request's re-run just fetched.
          if (used.cred) this.exec?.invalidate(used.cred);
          continue;
        }
        if (!e.transient || retries >= maxRetries) throw gaveUp(e, resend + 1, performance.now() - started);
        await this.backoff(req, e, retries++);
      }
    }
  }

  private async backoff(req: KubeRequest, e: ApiError, retry: number): Promise<void> {
    const cap = this.opts.maxRetryAfterMs ?? 10_000;
    const ms = e.retryAfter !== undefined ? Math.min(e.retryAfter * 1000, cap) : 200 * 2 ** retry;
    // At info: a tick that takes seconds longer than its requestTimeout should say why as it goes.
    this.opts.log.info(`retrying ${req.method} ${req.target} in ${ms}ms after ${e.reason}`, {
      reason: e.reason,
      code: e.code,
      try: retry + 2,
    });
    await (this.opts.sleep ?? abortableSleep)(ms, this.opts.signal);
  }

  async stream(req: KubeRequest, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    // The timer is cleared once headers are in, so a long watch is bounded by `signal` alone.
    const headers = new AbortController();
    const timer = setTimeout(
      () => headers.abort(new DOMException("timeout", "TimeoutError")),
      this.opts.requestTimeoutMs,
    );
    const all = AbortSignal.any([this.opts.signal, signal, headers.signal]);
    try {
      const timedOut = () => headers.signal.aborted;
      return await this.span({ req, resend: 0, signal: all, timedOut }, async (a, span) => {
        const res = await this.send(a);
        span.setAttributes({ "http.response.status_code": res.status });
        if (!res.ok) throw this.statusError(a, res, await res.text());
        if (!res.body)
          throw this.error(a, { code: res.status, reason: "MalformedResponse", message: "no body" });
        return res.body;
      });
    } finally {
      clearTimeout(timer);
    }
  }

  private withTimeout<T>(
    req: KubeRequest,
    resend: number,
    fn: (a: Attempt, span: SpanHandle) => Promise<T>,
  ): Promise<T> {
    // Settled once fn has read the body: the timer and the tick signal's listener go with it.
    return withRequestSignal(this.opts.signal, this.opts.requestTimeoutMs, (rs) =>
      this.span({ req, resend, signal: rs.signal, timedOut: rs.timedOut }, fn),
    ).finally(this.settled);
  }

  /** Reads the whole body inside the request's signal: the timeout bounds the body too. */
  private async complete(a: Attempt, span: SpanHandle): Promise<unknown> {
    const res = await this.send(a);
    // HTTP client conventions: the status goes on every request span, not only on failures.
    span.setAttributes({ "http.response.status_code": res.status });
    a.req.onHeaders?.(res.headers);
    if (!res.ok) {
      const text = await res.text().catch((e) => {
        throw this.transportError(a, e);
      });
      throw this.statusError(a, res, text);
    }
    try {
      return await res.json();
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw this.transportError(a, e);
      throw this.error(a, { code: res.status, reason: "MalformedResponse", message: "response is not JSON" });
    }
  }

  private async span<T>(a: Attempt, fn: (a: Attempt, span: SpanHandle) => Promise<T>): Promise<T> {
    const url = this.url(a.req);
    const attributes: Record<string, string | number> = {
      "http.request.method": a.req.method,
      "server.address": url.hostname.replace(/^\[|\]$/g, ""),
      "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)),
      "url.full": url.toString(),
    };
    if (a.resend > 0) attributes["http.request.resend_count"] = a.resend;
    return this.opts.telemetry.span(a.req.method, { kind: "client", attributes }, async (span) => {
      try {
        return await fn(a, span);
      } catch (e) {
        if (e instanceof ApiError) {
          if (e.code > 0) span.setAttributes({ "http.response.status_code": e.code });
          span.setError(e.code > 0 ? String(e.code) : e.reason, e.message);
        } else span.setError((e as Error).name ?? "Error", String((e as Error).message));
        throw e;
      }
    });
  }

  private async send(a: Attempt): Promise<Response> {
    const headers: Record<string, string> = {
      Accept: "application/json",
      "User-Agent": `image-refresh/${VERSION}`,
    };
    // Without a plugin, no await before the fetch: a request sent early leaves at once.
    const cred = this.exec ? await this.execCredential(a) : undefined;
    const token = cred ? cred.token : this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (a.req.body !== undefined) headers["Content-Type"] = a.req.contentType ?? "application/json";
    mark("first-fetch");
    try {
      return await this.fetch(this.url(a.req), {
        method: a.req.method,
        headers,
        body: a.req.body === undefined ? undefined : JSON.stringify(a.req.body),
        signal: a.signal,
        tls: cred?.clientCertPem
          ? { ...this.tls, cert: cred.clientCertPem, key: cred.clientKeyPem }
          : this.tls,
        redirect: "manual",
      });
    } catch (e) {
      throw this.transportError(a, e);
    }
  }

  /** The plugin's credential, bounded by the request timeout; undefined without a plugin. */
  private async execCredential(a: Attempt): Promise<ExecCredential | undefined> {
    if (!this.exec) return undefined;
    try {
      const cred = await this.exec.credential({
        timeoutMs: this.opts.requestTimeoutMs,
        signal: this.opts.signal,
      });
      if (a.used) a.used.cred = cred;
      return cred;
    } catch (e) {
      if (!(e instanceof ExecPluginError)) throw e;
      throw this.error(a, { code: 0, reason: "ExecPluginError", message: e.message });
    }
  }

  /** Projected tokens rotate: read the file each time, keep the last good token if a read fails. */
  private token(): string | undefined {
    const file = this.conn.tokenFile;
    if (!file) return this.conn.token;
    try {
      const t = (this.opts.readFile ?? readUtf8)(file).trim();
      if (t) this.lastToken = t;
    } catch {
      // kept: a token being swapped in place is briefly unreadable
    }
    return this.lastToken;
  }

  private url(req: KubeRequest): URL {
    // The server may carry a path prefix (Rancher and other proxies); keep it.
    const url = new URL(this.conn.server + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
    return url;
  }

  private statusError(a: Attempt, res: Response, body: string): ApiError {
    // A proxy or webhook may quote the request's Authorization header in what it sends back.
    const { reason, message } = parseStatusBody(res.status, scrub(body, [this.conn.token, this.lastToken]));
    const retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
    return this.error(a, { code: res.status, reason, message, retryAfter });
  }

  private transportError(a: Attempt, e: unknown): ApiError {
    if (e instanceof ApiError) return e;
    if (this.opts.signal.aborted)
      return this.error(a, { code: 0, reason: "Aborted", message: "the tick was cancelled", cause: e });
    const where = hostPort(this.url(a.req));
    if (a.timedOut()) {
      return this.error(a, {
        code: 0,
        reason: "Timeout",
        message: `no response from ${where} within ${this.opts.requestTimeoutMs}ms`,
        cause: e,
      });
    }
    if (a.signal.aborted)
      return this.error(a, { code: 0, reason: "Aborted", message: "the request was cancelled", cause: e });
    const err = e as { code?: unknown; message?: unknown };
    const detail = `${typeof err.code === "string" ? `${err.code}: ` : ""}${String(err.message ?? e)}`;
    // A certificate the CA does not vouch for will not get better by asking again.
    const tls = /CERT|SIGNATURE|SELF_SIGNED|TLS|SSL|ISSUER/i.test(String(err.code ?? ""));
    return this.error(a, {
      code: 0,
      reason: tls ? "TLSError" : "NetworkError",
      message: `${where}: ${detail}`,
      cause: e,
    });
  }

  private error(
    a: Attempt,
    f: { code: number; reason: string; message: string; retryAfter?: number; cause?: unknown },
  ): ApiError {
    return new ApiError({
      method: a.req.method,
      url: this.url(a.req).toString(),
      target: a.req.target,
      code: f.code,
      reason: f.reason,
      statusMessage: f.message,
      retryAfter: f.retryAfter,
      cause: f.cause,
    });
  }
}

/** `host:port` of a URL, the port spelled out even when it is the scheme's default. */
export function hostPort(url: URL): string {
  return `${url.hostname}:${url.port || (url.protocol === "https:" ? 443 : 80)}`;
}

/** The last error of a request that was tried more than once, saying how often and for how long. */
function gaveUp(e: ApiError, tries: number, ms: number): ApiError {
  if (tries < 2) return e;
  return new ApiError({
    method: e.method,
    url: e.url,
    target: e.target,
    code: e.code,
    reason: e.reason,
    statusMessage: `${e.statusMessage ? `${e.statusMessage} ` : ""}(${tries} tries over ${(ms / 1000).toFixed(1)}s)`,
    retryAfter: e.retryAfter,
    cause: e,
  });
}
