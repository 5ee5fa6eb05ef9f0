// WATCH as the apiserver serves it: newline-delimited JSON events over one chunked 200,
// "start at exact" from a resourceVersion, 410 Expired for a compacted one (in-stream, like
// the watch cache), bookmarks only when asked, and a clean EOF at timeoutSeconds.
import { type Ctx, finish } from "./http.ts";
import { labelsMatch } from "./labels.ts";
import { clone, type JsonObject } from "./patch.ts";
import { badRequest, expired } from "./status.ts";
import type { Store, StoredEvent, StoredKind } from "./store.ts";

export interface WatchTarget {
  kind: StoredKind;
  /** Only objects whose labels match (a pod watch's labelSelector). */
  labelSelector?: string;
  namespace?: string;
  name?: string;
}

export interface WatchOptions {
  bookmarkMs: number;
  /** Injected: answer as if the requested RV were compacted. */
  forceExpired: boolean;
  /** Registers a closer so stop() can end the stream. */
  track(close: () => void): () => void;
}

/** `watch=1`, `watch=true`: anything but false/0/empty means watch. */
export const isWatch = (v: string | undefined): boolean =>
  v !== undefined && v !== "" && v !== "false" && v !== "0";

const DEFAULT_TIMEOUT_S = 1800; // --min-request-timeout; the real server randomises up to 2x

function wireEvent(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

interface Start {
  from: number;
  initial: boolean;
  expired: boolean;
}

/** Unset or "0": current state as synthetic ADDED events first; any other RV: only what came after it. */
function startPoint(ctx: Ctx, store: Store, opts: WatchOptions): Start | { error: string } {
  const rv = ctx.query.resourceVersion;
  const initialEvents = ctx.query.sendInitialEvents === "true";
  if (rv === undefined || rv === "" || rv === "0")
    return { from: store.rv, initial: true, expired: opts.forceExpired };
  if (!/^\d+$/.test(rv)) return { error: `invalid resource version: ${rv}` };
  const from = Number(rv);
  return { from, initial: initialEvents, expired: opts.forceExpired || from < store.compactedRv };
}

export function serveWatch(ctx: Ctx, store: Store, target: WatchTarget, opts: WatchOptions) {
  const start = startPoint(ctx, store, opts);
  if ("error" in start) {
    ctx.res.writeHead(400, { "content-type": "application/json" });
    ctx.res.end(`${JSON.stringify(badRequest(start.error))}\n`);
    return finish(ctx, 400);
  }
  ctx.res.writeHead(200, { "content-type": "application/json", "cache-control": "no-cache, private" });
  ctx.res.flushHeaders();
  ctx.entry.status = 200;
  if (start.expired) {
    const status = expired(String(start.from), String(store.rv));
    ctx.res.end(wireEvent("ERROR", status));
    return finish(ctx, 200);
  }
  stream(ctx, store, target, opts, start);
}

function stream(ctx: Ctx, store: Store, target: WatchTarget, opts: WatchOptions, start: Start) {
  const send = (type: string, object: unknown) => {
    if (!ctx.res.destroyed && !ctx.res.writableEnded) ctx.res.write(wireEvent(type, object));
  };
  const bookmark = (extra?: Record<string, string>) =>
    send("BOOKMARK", {
      kind: target.kind,
      apiVersion: target.kind === "Pod" ? "v1" : "apps/v1",
      metadata: { resourceVersion: String(store.rv), ...(extra ? { annotations: extra } : {}) },
    });
  const bookmarks = ctx.query.allowWatchBookmarks === "true";
  let last = start.from;
  const deliver = (ev: StoredEvent) => {
    if (ev.rv <= last) return;
    last = ev.rv;
    send(ev.type, ev.object);
  };
  if (start.initial) {
    last = store.rv;
    for (const obj of store.list(target.kind, target.namespace, target.name))
      if (labelsMatch(obj, target.labelSelector)) send("ADDED", clone(obj as JsonObject));
    // WatchList (sendInitialEvents=true) ends its initial burst with a marked bookmark.
    if (ctx.query.sendInitialEvents === "true" && bookmarks)
      bookmark({ "k8s.io/initial-events-end": "true" });
  } else {
    for (const ev of store.history(start.from))
      if (matches(ev, target) && labelsMatch(ev.object, target.labelSelector)) deliver(ev);
  }
  const unwatch = store.watch({
    ...target,
    send: (ev) => labelsMatch(ev.object, target.labelSelector) && deliver(ev),
  });
  const timers = [setTimeout(() => close(), timeoutMs(ctx))];
  if (bookmarks) timers.push(setInterval(() => bookmark(), opts.bookmarkMs));
  const untrack = opts.track(() => close());
  function close() {
    unwatch();
    untrack();
    for (const t of timers) clearTimeout(t);
    if (!ctx.res.writableEnded) ctx.res.end();
    finish(ctx, 200);
  }
  ctx.res.on("close", close);
}

function matches(ev: StoredEvent, t: WatchTarget): boolean {
  return (
    ev.kind === t.kind && (!t.namespace || ev.namespace === t.namespace) && (!t.name || ev.name === t.name)
  );
}

function timeoutMs(ctx: Ctx): number {
  const t = Number(ctx.query.timeoutSeconds);
  return (Number.isFinite(t) && t > 0 ? t : DEFAULT_TIMEOUT_S) * 1000;
}
