// The registry's one HTTP layer. Each request is a client span, is bounded by the request
// timeout combined with the tick's deadline until its body has arrived, and follows redirects by
// hand so that an Authorization header never reaches a host other than the one it was meant for.
import { withRequestSignal } from "../request-signal.ts";
import { authorizationSecrets, scrub } from "../scrub.ts";
import type { Telemetry } from "../telemetry.ts";
import { networkDetail, RegistryError } from "./errors.ts";

export interface HttpContext {
  fetch: typeof fetch;
  telemetry: Telemetry;
  signal: AbortSignal;
  requestTimeoutMs: number;
  /** Plain http is allowed only when the operator said so. */
  insecure: boolean;
  /** Extra trust anchor (PEM) for an in-process caller such as the demo; see client.ts. */
  ca?: string;
  /** Credentials that must never come back out of an answer (the dockerconfigjson password). */
  secrets?: readonly string[];
}

export interface HttpRequest {
  method: "GET" | "HEAD";
  url: URL;
  headers: Record<string, string>;
  /** The Authorization value; dropped when a redirect leaves the origin it was meant for. */
  authorization?: string;
  /** Keep the body's bytes (`bytes`): a blob is hashed as it was sent, not as text decoded it. */
  binary?: boolean;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  /** Scrubbed of credentials unless the status is 2xx (a token endpoint's answer is the token). */
  body: string;
  url: URL;
  /** What `scrub` must also replace in any text made from this answer. */
  secrets: readonly string[];
  /** The body as it came, when the request asked for `binary`. */
  bytes?: Uint8Array<ArrayBuffer>;
}

const MAX_REDIRECTS = 5;

/** `url.full` without userinfo; endpoints with userinfo are refused earlier, this is a backstop. */
export function safeUrl(url: URL): string {
  const copy = new URL(url.href);
  copy.username = "";
  copy.password = "";
  return copy.href;
}

export function assertTransport(url: URL, insecure: boolean): void {
  if (url.protocol === "https:") return;
  if (url.protocol === "http:" && insecure) return;
  throw new RegistryError(
    "network",
    `Cannot send a request to ${safeUrl(url)}: ${url.protocol === "http:" ? "plain http needs registry.insecure: true" : `unsupported scheme ${url.protocol}`}`,
  );
}

export type RegistryTls = { ca?: string; rejectUnauthorized: true };

/**
 * The `tls` option of a registry request. Verification is never off for a registry: credentials
 * travel on these requests. Bun's fetch verifies by default, and only
 * NODE_TLS_REJECT_UNAUTHORIZED in the environment switches that off: with it set to anything, or
 * with an extra trust anchor, the request says `rejectUnauthorized: true` itself. Otherwise it
 * names no option, because any `tls` option makes Bun set up a TLS context of its own for the
 * request instead of the process's default one, about a tenth of a no-op tick's time.
 */
export function registryTls(
  ca: string | undefined,
  env: Record<string, string | undefined>,
): RegistryTls | undefined {
  if (ca) return { rejectUnauthorized: true, ca };
  return env.NODE_TLS_REJECT_UNAUTHORIZED === undefined ? undefined : { rejectUnauthorized: true };
}

/** Sends a request, following up to five redirects; throws RegistryError on transport failure. */
export async function send(ctx: HttpContext, req: HttpRequest): Promise<HttpResponse> {
  let { url, authorization } = req;
  for (let hop = 0; ; hop++) {
    assertTransport(url, ctx.insecure);
    const res = await once(ctx, { ...req, url, authorization });
    const location = res.headers.get("location");
    if (res.status < 300 || res.status > 399 || res.status === 304 || !location) return res;
    if (hop === MAX_REDIRECTS) {
      throw new RegistryError(
        "server_error",
        `more than ${MAX_REDIRECTS} redirects from ${safeUrl(req.url)}`,
      );
    }
    const next = new URL(location, url);
    // Credentials belong to one origin: a redirect to blob storage or another host gets none.
    if (next.origin !== url.origin) authorization = undefined;
    url = next;
  }
}

async function once(ctx: HttpContext, req: HttpRequest): Promise<HttpResponse> {
  const port = req.url.port ? Number(req.url.port) : req.url.protocol === "https:" ? 443 : 80;
  const attributes = {
    "http.request.method": req.method,
    "server.address": req.url.hostname,
    "server.port": port,
    "url.full": safeUrl(req.url),
  };
  return ctx.telemetry.span(req.method, { kind: "client", attributes }, (span) =>
    // Settled once the answer is read whole or the request failed: its timer and the listener on
    // the tick's signal go then, not when the request timeout would have fired.
    withRequestSignal(ctx.signal, ctx.requestTimeoutMs, async ({ signal }) => {
      const headers = { ...req.headers, ...(req.authorization ? { Authorization: req.authorization } : {}) };
      try {
        const tls = registryTls(ctx.ca, process.env);
        const init: RequestInit & { tls?: RegistryTls } = {
          method: req.method,
          headers,
          redirect: "manual",
          signal,
          ...(tls ? { tls } : {}),
        };
        const res = await ctx.fetch(req.url, init);
        // The timeout covers the whole response: a body that stalls after the headers is a timeout too.
        // Empty for a HEAD, but read so the response is complete.
        const bytes = req.binary ? new Uint8Array(await res.arrayBuffer()) : undefined;
        const raw = bytes ? new TextDecoder().decode(bytes) : await res.text();
        span.setAttributes({ "http.response.status_code": res.status });
        if (res.status >= 400) span.setError(String(res.status));
        // An error page or body may quote the request's Authorization header back.
        const secrets = [...(ctx.secrets ?? []), ...authorizationSecrets(req.authorization)];
        const body = res.status >= 200 && res.status < 300 ? raw : scrub(raw, secrets);
        return {
          status: res.status,
          headers: res.headers,
          body,
          url: req.url,
          secrets,
          ...(bytes ? { bytes } : {}),
        };
      } catch (err) {
        const failure = classify(err, ctx, req.url);
        span.setError(
          failure.reason === "timeout" ? "timeout" : (failure.code ?? "network"),
          failure.message,
        );
        throw failure;
      }
    }),
  );
}

function classify(err: unknown, ctx: HttpContext, url: URL): RegistryError {
  // Host and port, the port spelled out: "cannot reach r.example" hides a wrong port.
  const target = `${url.hostname}:${url.port || (url.protocol === "https:" ? 443 : 80)}`;
  if (ctx.signal.aborted) {
    return new RegistryError("timeout", `the tick's deadline passed while waiting for ${target}`, {
      cause: err,
    });
  }
  const name = (err as { name?: string }).name;
  if (name === "TimeoutError" || name === "AbortError") {
    return new RegistryError(
      "timeout",
      `no complete response from ${target} within ${ctx.requestTimeoutMs} ms`,
      {
        cause: err,
      },
    );
  }
  const code = (err as { code?: string }).code;
  const detail = code ? networkDetail(code) : ((err as Error).message ?? String(err));
  return new RegistryError("network", `cannot reach ${target}: ${detail}`, { code, cause: err });
}
