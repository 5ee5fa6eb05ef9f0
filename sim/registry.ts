// The simulated OCI registry: the reference registry's manifest API and token auth, Docker
// Hub's rate-limit headers, and injectable faults. Used by the tests, the bench and
// `image-refresh demo` (inside the compiled binary, hence node: built-ins only).
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { type Fault, FaultSet } from "./faults.ts";
import { type AuthMode, SimAuth } from "./registry-auth.ts";
import {
  type Answered,
  type Exchange,
  headersOf,
  now,
  Quota,
  queryOf,
  type RegistryLogEntry,
  reply,
  replyError,
} from "./registry-http.ts";
import { acceptList, ManifestStore } from "./registry-store.ts";
import type { TlsMaterial } from "./tls.ts";

export type { Fault, FaultRule } from "./faults.ts";
export type { RegistryLogEntry } from "./registry-http.ts";

export interface StartRegistryOptions {
  tls?: TlsMaterial;
  /** Default bearer. Basic mode wants valid credentials on every request. */
  auth?: AuthMode;
  /** Accepted Basic credentials; without a list, any credentials are accepted. */
  users?: Record<string, string>;
  /** Bearer mode: whether an anonymous token grants pull. Default true. */
  anonymousPull?: boolean;
  /** Like Docker Hub: 401 rather than 404 for a repository that does not exist. */
  hubLike?: boolean;
  /** GET /v2/ answers 200 without credentials; only the manifests ask for them (per repository). */
  openRoot?: boolean;
  /** Pull quota; only manifest GETs count. Headers are sent on GET and HEAD. */
  rateLimit?: { limit: number; windowSeconds: number };
}

export interface SimRegistry {
  readonly url: string;
  /** `127.0.0.1:<port>` */
  readonly host: string;
  push(repository: string, tag: string, opts?: { multiArch?: boolean; oci?: boolean }): string;
  /** Stores a manifest as given (a signature's); with `tag`, under that tag too. Returns its digest. */
  putManifest(repository: string, bytes: Uint8Array, mediaType: string, tag?: string): string;
  /** Stores a blob; returns its digest. */
  putBlob(repository: string, bytes: Uint8Array): string;
  /** Moves a tag back to a build pushed before. */
  retag(repository: string, tag: string, digest: string): void;
  readonly faults: FaultSet;
  readonly log: RegistryLogEntry[];
  clearLog(): void;
  counts(): { challenge: number; token: number; head: number; get: number };
  stop(): Promise<void>;
}

const MANIFEST_PATH = /^\/v2\/(.+)\/manifests\/([^/]+)$/;
// The reference registry (distribution) has no referrers API: a 404, as for any route it lacks.
const BLOB_PATH = /^\/v2\/(.+)\/blobs\/(sha256:[0-9a-f]{64})$/;
const NAME_RE = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
const SERVICE = "sim-registry";

interface Sim {
  auth: SimAuth;
  store: ManifestStore;
  faults: FaultSet;
  quota?: Quota;
  hubLike: boolean;
  openRoot: boolean;
}

export async function startRegistry(opts: StartRegistryOptions = {}): Promise<SimRegistry> {
  const log: RegistryLogEntry[] = [];
  const sockets = new Set<Socket>();
  const sim: Sim = {
    auth: new SimAuth({ mode: "none", anonymousPull: true, realm: "", service: SERVICE }),
    store: new ManifestStore(),
    faults: new FaultSet(),
    quota: opts.rateLimit ? new Quota(opts.rateLimit.limit, opts.rateLimit.windowSeconds) : undefined,
    hubLike: opts.hubLike ?? false,
    openRoot: opts.openRoot ?? false,
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => void handle(sim, log, req, res);
  const server: Server = opts.tls
    ? createHttpsServer({ cert: opts.tls.certPem, key: opts.tls.keyPem }, handler)
    : createHttpServer(handler);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("secureConnection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const url = `${opts.tls ? "https" : "http"}://127.0.0.1:${port}`;
  sim.auth = new SimAuth({
    mode: opts.auth ?? "bearer",
    users: opts.users,
    anonymousPull: opts.anonymousPull ?? true,
    realm: `${url}/token`,
    service: SERVICE,
  });
  return {
    url,
    host: `127.0.0.1:${port}`,
    push: (repository, tag, o) => sim.store.push(repository, tag, o),
    retag: (repository, tag, digest) => sim.store.retag(repository, tag, digest),
    putManifest: (repository, bytes, mediaType, tag) =>
      sim.store.putManifest(repository, Buffer.from(bytes), mediaType, tag),
    putBlob: (repository, bytes) => sim.store.putBlob(repository, Buffer.from(bytes)),
    faults: sim.faults,
    log,
    clearLog: () => void log.splice(0),
    counts: () => countsOf(log),
    stop: () => stopServer(server, sockets),
  };
}

function countsOf(log: readonly RegistryLogEntry[]) {
  const c = { challenge: 0, token: 0, head: 0, get: 0 };
  for (const e of log) {
    if (e.path === "/v2/" || e.path === "/v2") c.challenge++;
    else if (e.path === "/token") c.token++;
    else if (MANIFEST_PATH.test(e.path)) e.method === "HEAD" ? c.head++ : c.get++;
  }
  return c;
}

function stopServer(server: Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Hanging requests (the `hang` fault) hold their sockets open; end them so close completes.
    for (const s of sockets) s.destroy();
  });
}

async function handle(
  sim: Sim,
  log: RegistryLogEntry[],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://sim");
  const method = req.method ?? "GET";
  const entry: RegistryLogEntry = {
    method,
    path: url.pathname,
    query: queryOf(url),
    headers: headersOf(req),
    status: 0,
    start: now(),
    end: 0,
  };
  log.push(entry);
  res.on("close", () => {
    if (!entry.end) entry.end = now();
  });
  const x: Exchange = { req, res, url, method, entry, malformed: false };
  const fault = sim.faults.take(method, url.pathname, url.search);
  if (fault && (await applyFault(sim, x, fault))) return;
  route(sim, x);
}

/** True when the fault has answered (or deliberately not answered) the request. */
async function applyFault(sim: Sim, x: Exchange, fault: Fault): Promise<boolean> {
  switch (fault.type) {
    case "hang":
      return true; // never answered; stop() destroys the socket
    case "reset":
    case "lost": // for a read, an answer lost after the work is a reset
      x.req.socket.destroy();
      return true;
    case "delay":
      await new Promise((r) => setTimeout(r, fault.ms));
      return false;
    case "malformed":
      x.malformed = true;
      return false;
    case "status":
      faultStatus(sim, x, fault);
      return true;
    default:
      return false;
  }
}

function faultStatus(sim: Sim, x: Exchange, fault: Extract<Fault, { type: "status" }>): Answered {
  // A 2xx/3xx status fault answers bare: e.g. a 200 HEAD without Docker-Content-Digest.
  if (fault.code < 400) return reply(x, fault.code, {});
  const headers: Record<string, string> = { ...(sim.quota?.headers() ?? {}) };
  if (fault.code === 429 || fault.retryAfter !== undefined)
    headers["Retry-After"] = String(fault.retryAfter ?? 60);
  return replyError(x, fault.code, {
    code: fault.reason,
    message: fault.message,
    headers,
    plainText: fault.plainText,
  });
}

function route(sim: Sim, x: Exchange): Answered {
  const path = x.url.pathname;
  const authorization = x.req.headers.authorization;
  if ((path === "/v2/" || path === "/v2") && (x.method === "GET" || x.method === "HEAD")) {
    const denial = sim.openRoot ? undefined : sim.auth.check(authorization);
    if (x.malformed) return replyError(x, 401, { headers: { "WWW-Authenticate": 'Bearer realm="' } });
    if (denial) return replyError(x, 401, { headers: { "WWW-Authenticate": denial.challenge } });
    return reply(x, 200, { "Content-Type": "application/json" }, "{}");
  }
  if (path === "/token" && x.method === "GET") {
    if (x.malformed) return reply(x, 200, { "Content-Type": "application/json" }, "{not json");
    const answer = sim.auth.token(
      authorization,
      x.url.searchParams.getAll("scope"),
      x.url.searchParams.get("service") ?? undefined,
    );
    return reply(x, answer.status, { "Content-Type": "application/json" }, JSON.stringify(answer.body));
  }
  const b = BLOB_PATH.exec(path);
  if (b && (x.method === "GET" || x.method === "HEAD")) return blob(sim, x, b[1] as string, b[2] as string);
  const m = MANIFEST_PATH.exec(path);
  if (m && (x.method === "GET" || x.method === "HEAD"))
    return manifest(sim, x, m[1] as string, m[2] as string);
  return replyError(x, 404, { code: "UNSUPPORTED", message: "route not served by the simulated registry" });
}

function manifest(sim: Sim, x: Exchange, name: string, reference: string): Answered {
  if (!NAME_RE.test(name))
    return replyError(x, 400, { code: "NAME_INVALID", message: "invalid repository name" });
  const denial = sim.auth.check(x.req.headers.authorization, name);
  const hidden = sim.hubLike && !sim.store.has(name);
  if (denial || hidden) {
    const challenge = denial?.challenge ?? sim.auth.check(undefined, name)?.challenge;
    return replyError(x, 401, { headers: challenge ? { "WWW-Authenticate": challenge } : {} });
  }
  const rate = sim.quota?.headers() ?? {};
  if (sim.quota && x.method === "GET" && sim.quota.remaining <= 0) {
    return replyError(x, 429, { headers: { ...rate, "Retry-After": String(sim.quota.retryAfter()) } });
  }
  const found = sim.store.lookup(name, reference, acceptList([x.req.headers.accept ?? ""]));
  if ("error" in found) {
    const status = "status" in found ? found.status : 404;
    return replyError(x, status, { code: found.error, message: found.message, headers: rate });
  }
  const digest = x.malformed ? "sha256:not-a-digest" : found.digest;
  const ifNoneMatch = x.req.headers["if-none-match"]?.replace(/"/g, "");
  // distribution's 304 carries neither Docker-Content-Digest nor Etag.
  if (ifNoneMatch === found.digest) return reply(x, 304, { ...rate });
  if (sim.quota && x.method === "GET") sim.quota.remaining--;
  return reply(
    x,
    200,
    {
      ...rate,
      "Content-Type": found.mediaType,
      "Content-Length": String(found.bytes.length),
      "Docker-Content-Digest": digest,
      Etag: `"${digest}"`,
    },
    found.bytes,
  );
}

/** A blob GET, authorized like a manifest's; the reference registry's BLOB_UNKNOWN when absent. */
function blob(sim: Sim, x: Exchange, name: string, digest: string): Answered {
  const denial = sim.auth.check(x.req.headers.authorization, name);
  if (denial) return replyError(x, 401, { headers: { "WWW-Authenticate": denial.challenge } });
  const bytes = sim.store.blob(name, digest);
  if (!bytes) return replyError(x, 404, { code: "BLOB_UNKNOWN", message: "blob unknown to registry" });
  const headers = {
    "Content-Type": "application/octet-stream",
    "Content-Length": String(bytes.length),
    "Docker-Content-Digest": digest,
  };
  return reply(x, 200, headers, bytes);
}
