// The per-request plumbing shared by every route: the request log, JSON and Status
// answers, and the injected faults that stand in for a misbehaving API server.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Fault } from "../faults.ts";
import { forCode, type Status } from "./status.ts";

export interface RequestLogEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  body?: string;
  status: number;
  start: number;
  end: number;
  fault?: string;
}

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  search: string;
  query: Record<string, string>;
  body: string;
  contentType?: string;
  entry: RequestLogEntry;
  /** The `lost` fault: serve the request, then destroy the connection instead of answering. */
  loseAnswer?: boolean;
}

export async function readContext(req: IncomingMessage, res: ServerResponse): Promise<Ctx> {
  const url = new URL(req.url ?? "/", "https://sim.invalid");
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString("utf8");
  const contentType = req.headers["content-type"];
  const entry: RequestLogEntry = {
    method: req.method ?? "GET",
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    ...(contentType ? { contentType } : {}),
    ...(body ? { body } : {}),
    status: 0,
    start: Date.now(),
    end: 0,
  };
  return {
    req,
    res,
    method: entry.method,
    path: url.pathname,
    search: url.search,
    query: entry.query,
    body,
    contentType,
    entry,
  };
}

export function sendJson(ctx: Ctx, code: number, value: unknown, headers: Record<string, string> = {}): void {
  if (ctx.res.headersSent || ctx.res.destroyed) return;
  if (ctx.loseAnswer) {
    finish(ctx, 0);
    ctx.req.socket.destroy();
    return;
  }
  const text = JSON.stringify(value);
  ctx.res.writeHead(code, {
    "content-type": "application/json",
    "cache-control": "no-cache, private",
    ...headers,
  });
  ctx.res.end(`${text}\n`);
  finish(ctx, code);
}

export function sendStatus(ctx: Ctx, status: Status, headers: Record<string, string> = {}): void {
  const retry = status.details?.retryAfterSeconds;
  sendJson(ctx, status.code, status, retry ? { "retry-after": String(retry), ...headers } : headers);
}

export function finish(ctx: Ctx, code: number): void {
  ctx.entry.status = code;
  ctx.entry.end = Date.now();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Applies a fault. Returns "continue" when the request should then be served normally
 * (after a delay) and "done" when the fault answered, hung or killed the request.
 * `expired` is left to the watch handler, which alone can answer it in-stream.
 */
export async function applyFault(ctx: Ctx, fault: Fault): Promise<"continue" | "done"> {
  ctx.entry.fault = fault.type;
  switch (fault.type) {
    case "delay":
      await sleep(fault.ms);
      return "continue";
    case "expired":
      return "continue";
    case "hang":
      // Never answered: the client's own timeout or stop() ends it.
      ctx.req.socket.once("close", () => finish(ctx, 0));
      return "done";
    case "silent":
      ctx.res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache, private" });
      ctx.res.flushHeaders();
      ctx.req.socket.once("close", () => finish(ctx, 200));
      return "done";
    case "lost":
      ctx.loseAnswer = true;
      return "continue";
    case "reset":
      finish(ctx, 0);
      ctx.req.socket.destroy();
      return "done";
    case "malformed":
      ctx.res.writeHead(200, { "content-type": "application/json" });
      ctx.res.end('{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":');
      finish(ctx, 200);
      return "done";
    case "status":
      statusFault(ctx, fault);
      return "done";
  }
}

function statusFault(ctx: Ctx, fault: Extract<Fault, { type: "status" }>): void {
  const headers: Record<string, string> =
    fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {};
  if (fault.plainText) {
    // API Priority and Fairness answers with http.Error: plain text, not a Status object.
    const text =
      fault.message ??
      (fault.code === 429 ? "Too many requests, please try again later." : `injected ${fault.code}`);
    ctx.res.writeHead(fault.code, {
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
      ...headers,
    });
    ctx.res.end(`${text}\n`);
    finish(ctx, fault.code);
    return;
  }
  const status = forCode(fault.code, fault.reason, fault.message);
  if (fault.retryAfter !== undefined)
    status.details = { ...status.details, retryAfterSeconds: fault.retryAfter };
  sendJson(ctx, fault.code, status, headers);
}
