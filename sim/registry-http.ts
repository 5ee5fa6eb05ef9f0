// Small pieces of the simulated registry's HTTP side: the exchange being answered, replies in
// the distribution error format, and the pull quota with Docker Hub's rate-limit headers.
import type { IncomingMessage, ServerResponse } from "node:http";

export interface RegistryLogEntry {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  /** 0 while unanswered, and for a hang or reset. */
  status: number;
  /** Epoch milliseconds, fractional. */
  start: number;
  end: number;
}

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  method: string;
  entry: RegistryLogEntry;
  /** Set by a `malformed` fault: the route answers with something a client must reject. */
  malformed: boolean;
}

export const now = (): number => performance.timeOrigin + performance.now();

/** Marks a request as answered; routes `return reply(...)` so every branch visibly answers. */
export type Answered = true;

export function reply(
  x: Exchange,
  status: number,
  headers: Record<string, string>,
  body?: Buffer | string,
): Answered {
  const bytes = body === undefined ? undefined : Buffer.from(body);
  const all: Record<string, string> = { "Docker-Distribution-Api-Version": "registry/2.0", ...headers };
  if (bytes && !all["Content-Length"]) all["Content-Length"] = String(bytes.length);
  x.res.writeHead(status, all);
  // A HEAD answer carries the headers a GET would, never the body.
  x.res.end(x.method === "HEAD" ? undefined : bytes);
  x.entry.status = status;
  x.entry.end = now();
  return true;
}

const CODES: Record<number, string> = {
  400: "NAME_INVALID",
  401: "UNAUTHORIZED",
  403: "DENIED",
  404: "MANIFEST_UNKNOWN",
  429: "TOOMANYREQUESTS",
};

/** `{"errors":[{code,message}]}` (distribution-spec), or plain text like a front proxy. */
export function replyError(
  x: Exchange,
  status: number,
  opts: { code?: string; message?: string; headers?: Record<string, string>; plainText?: boolean } = {},
): Answered {
  const code = opts.code ?? CODES[status] ?? "UNKNOWN";
  const message =
    opts.message ?? (status === 429 ? "You have reached your pull rate limit." : code.toLowerCase());
  if (opts.plainText) {
    return reply(x, status, { "Content-Type": "text/plain", ...opts.headers }, `${message}\n`);
  }
  const body = JSON.stringify({ errors: [{ code, message, detail: null }] });
  return reply(x, status, { "Content-Type": "application/json", ...opts.headers }, body);
}

/** A fixed-window pull quota; only a manifest GET is a pull, a HEAD is a free version check. */
export class Quota {
  remaining: number;
  #resetAt = 0;
  constructor(
    readonly limit: number,
    readonly windowSeconds: number,
  ) {
    this.remaining = limit;
  }
  #roll(): void {
    if (Date.now() < this.#resetAt) return;
    this.remaining = this.limit;
    this.#resetAt = Date.now() + this.windowSeconds * 1000;
  }
  headers(): Record<string, string> {
    this.#roll();
    return {
      "ratelimit-limit": `${this.limit};w=${this.windowSeconds}`,
      "ratelimit-remaining": `${Math.max(0, this.remaining)};w=${this.windowSeconds}`,
      "docker-ratelimit-source": "127.0.0.1",
    };
  }
  retryAfter(): number {
    return Math.max(1, Math.ceil((this.#resetAt - Date.now()) / 1000));
  }
}

export function queryOf(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    out[key] = all.length === 1 ? (all[0] as string) : all;
  }
  return out;
}

export function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}
