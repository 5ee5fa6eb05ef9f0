// One request to an AWS endpoint (STS, ECR, the EKS Pod Identity agent): a client span, bounded by
// the request timeout and the tick's deadline, its answer read whole, any text from it scrubbed of
// the secrets this exchange carries before it becomes a message. The registry's own HTTP layer
// sends only GET and HEAD without a body; these requests POST forms and JSON.
import { withRequestSignal } from "../../request-signal.ts";
import { scrub } from "../../scrub.ts";
import { RegistryError } from "../errors.ts";
import { type HttpContext, safeUrl } from "../http.ts";

export interface AwsRequest {
  method: "GET" | "POST";
  url: URL;
  headers: Headers;
  body?: string;
  /** What the request is, for messages: "STS AssumeRoleWithWebIdentity". */
  what: string;
}

export interface AwsAnswer {
  status: number;
  headers: Headers;
  /** Scrubbed of `secrets` unless 2xx (a 2xx answer is the credential itself: never put in a message). */
  body: string;
}

/** Sends it; a transport failure is a RegistryError (network or timeout) naming the endpoint. */
export async function awsRequest(
  ctx: HttpContext,
  req: AwsRequest,
  secrets: readonly string[],
): Promise<AwsAnswer> {
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
      try {
        const init: RequestInit & { tls?: { ca: string } } = {
          method: req.method,
          headers: req.headers,
          redirect: "manual",
          signal,
          ...(req.body !== undefined ? { body: req.body } : {}),
          ...(ctx.ca ? { tls: { ca: ctx.ca } } : {}),
        };
        const res = await ctx.fetch(req.url, init);
        const raw = await res.text();
        span.setAttributes({ "http.response.status_code": res.status });
        if (res.status >= 400) span.setError(String(res.status));
        const ok = res.status >= 200 && res.status < 300;
        return { status: res.status, headers: res.headers, body: ok ? raw : scrub(raw, secrets) };
      } catch (err) {
        const timeout = ctx.signal.aborted || ["TimeoutError", "AbortError"].includes((err as Error)?.name);
        const where = `${req.url.hostname}:${port}`;
        const failure = timeout
          ? new RegistryError(
              "timeout",
              `${req.what}: no complete response from ${where} within ${ctx.requestTimeoutMs} ms`,
            )
          : new RegistryError(
              "network",
              `${req.what}: cannot reach ${where}: ${(err as { code?: string }).code ?? (err as Error)?.message}`,
            );
        span.setError(failure.reason, failure.message);
        throw failure;
      }
    }),
  );
}

/**
 * Plain http only where the AWS SDKs allow it for credentials (a loopback or the EKS Pod Identity
 * agent's link-local address), or where the registry's settings allow it (insecure: true).
 */
export function checkedAwsUrl(raw: string, what: string, insecure: boolean): URL {
  const url = URL.parse(raw);
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:"))
    throw new RegistryError("network", `${what}: ${raw} is not an http(s) URL`);
  if (url.username || url.password)
    throw new RegistryError("network", `${what}: the URL must not carry credentials`);
  if (url.protocol === "http:" && !insecure && !LOCAL_HOSTS.test(url.hostname))
    throw new RegistryError(
      "network",
      `${what}: ${safeUrl(url)} is plain http; credentials go over it only to a loopback or the EKS Pod Identity agent, or with registry insecure: true`,
    );
  return url;
}

const LOCAL_HOSTS =
  /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]|169\.254\.170\.2|169\.254\.170\.23|\[fd00:ec2::23\])$/;
