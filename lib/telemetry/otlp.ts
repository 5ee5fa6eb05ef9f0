// One OTLP/HTTP export: a POST of an already serialized request, retried per the OTLP spec and
// never past the flush deadline. Written over fetch instead of using the SDK's OTLP exporters:
// those load node:http, node:zlib and node:stream plus their own copies of the SDK, which cost a
// telemetry-on tick about 20 ms of its start, and they retry a refused
// connection until their timeout, holding a tick whose collector is down for the whole 5 s budget.
import type { OtlpTarget } from "./env.ts";
import { type Failure, retryAfterDelayMs, retryDelay } from "./retry.ts";

export interface PostOptions {
  /** Epoch ms by which every attempt and wait must be over (the flush budget's end). */
  deadline: number;
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export type PostResult = { ok: true; body: Uint8Array } | { ok: false; reason: string };

type Attempt = { ok: true; body: Uint8Array } | { ok: false; failure: Failure; reason: string };

const CONTENT_TYPE = { "http/protobuf": "application/x-protobuf", "http/json": "application/json" } as const;

function requestInit(target: OtlpTarget, payload: Uint8Array): RequestInit {
  const headers = new Headers(target.headers);
  // Set last: the body is ours, so its type and encoding are too, whatever OTEL_*_HEADERS says.
  headers.set("Content-Type", CONTENT_TYPE[target.protocol]);
  const gzip = target.compression === "gzip";
  if (gzip) headers.set("Content-Encoding", "gzip");
  else headers.delete("Content-Encoding");
  // No keep-alive: the process exits right after this one request per signal.
  return {
    method: "POST",
    headers,
    body: gzip ? Bun.gzipSync(payload as Uint8Array<ArrayBuffer>) : payload,
    keepalive: false,
  };
}

/** Sends `payload` to the target; resolves to the collector's answer or a reason. Never rejects. */
export async function postOtlp(
  target: OtlpTarget,
  payload: Uint8Array,
  opts: PostOptions,
): Promise<PostResult> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms: number) => Bun.sleep(ms));
  const random = opts.random ?? Math.random;
  let init: RequestInit;
  try {
    init = requestInit(target, payload);
  } catch (err) {
    return { ok: false, reason: `cannot build the request: ${(err as Error).message}` };
  }
  for (let attempt = 1; ; attempt++) {
    const timeoutMs = Math.min(target.timeoutMs, opts.deadline - now());
    const result = await attemptOnce(target.url, init, timeoutMs, opts.fetch ?? fetch, now);
    if (result.ok) return result;
    const delay = retryDelay(result.failure, attempt, {
      remainingMs: opts.deadline - now(),
      random: random(),
    });
    if (delay === undefined)
      return { ok: false, reason: attempt > 1 ? `${result.reason} (${attempt} attempts)` : result.reason };
    await sleep(delay);
  }
}

async function attemptOnce(
  url: string,
  init: RequestInit,
  timeoutMs: number,
  doFetch: NonNullable<PostOptions["fetch"]>,
  now: () => number,
): Promise<Attempt> {
  if (timeoutMs <= 0) return { ok: false, failure: { kind: "timeout" }, reason: "flush deadline reached" };
  try {
    // The timeout covers the answer's body too: a collector may send headers and then stall.
    const res = await doFetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const body = new Uint8Array(await res.arrayBuffer());
    if (res.ok) return { ok: true, body };
    const retryAfterMs = retryAfterDelayMs(res.headers.get("retry-after"), now());
    return {
      ok: false,
      failure: { kind: "status", status: res.status, retryAfterMs },
      reason: `collector answered ${res.status}${res.statusText ? ` ${res.statusText}` : ""}${detail(res, body)}`,
    };
  } catch (err) {
    const e = err as Error;
    if (e.name === "TimeoutError")
      return { ok: false, failure: { kind: "timeout" }, reason: `no answer within ${timeoutMs} ms` };
    return { ok: false, failure: { kind: "network" }, reason: e.message || e.name };
  }
}

/** The start of a readable error body (a protobuf google.rpc.Status is not worth printing). */
function detail(res: Response, body: Uint8Array): string {
  const type = res.headers.get("content-type") ?? "";
  if (body.length === 0 || !(type.startsWith("text/") || type.includes("json"))) return "";
  const text = new TextDecoder().decode(body.subarray(0, 200)).replace(/\s+/g, " ").trim();
  return text ? `: ${text}` : "";
}
