// Resolves the current digest of one tag in many repositories of one registry, within the
// SPEC's request budget: one probe, at most one token request, one HEAD per repository.
// Failures are per image; only a 429 stops the rest, because the registry's quota belongs to the
// workloads' own pulls and every further request would spend it.
import type { Logger } from "../log.ts";
import { basicSecrets } from "../scrub.ts";
import type { Telemetry } from "../telemetry.ts";
import { authorize, type TokenEndpoint } from "./auth.ts";
import type { BasicCredentials } from "./credentials.ts";
import { RegistryError, type RegistryFailure } from "./errors.ts";
import type { HttpContext } from "./http.ts";
import { headDigest } from "./manifest.ts";
import { registryEndpoint, repositoryPath, TAG_RE } from "./reference.ts";

export type { RegistryFailure } from "./errors.ts";
export type DigestResult =
  | { ok: true; digest: string }
  | { ok: false; reason: RegistryFailure; message: string };

export interface ResolveOptions {
  host: string;
  endpoint?: string;
  insecure?: boolean;
  credentials?: BasicCredentials;
  /** Configured token endpoint: no challenge probe. */
  token?: TokenEndpoint;
  requestTimeoutMs: number;
  /** The tick's deadline. */
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  fetch?: typeof fetch;
  /** HEADs in flight at once; default 8. */
  concurrency?: number;
  /**
   * Extra trust anchor (PEM). Processes started with NODE_EXTRA_CA_CERTS need none: Bun reads
   * that variable at start-up (also in a compiled binary), but not when it is set later, so an
   * in-process caller with a per-run CA (the demo, tests) passes it here.
   */
  ca?: string;
}

const DEFAULT_CONCURRENCY = 8;

/** Checks options up front; these are configuration errors, thrown before any request. */
function checkedEndpoint(tag: string, opts: ResolveOptions): URL {
  if (!TAG_RE.test(tag))
    throw new Error(`Cannot resolve digests: tag "${tag}" does not match the OCI tag grammar`);
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(
      `Cannot resolve digests: concurrency must be a positive integer; current value is ${concurrency}`,
    );
  }
  const raw = registryEndpoint(opts.host, opts.endpoint);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`Cannot resolve digests: registry endpoint "${raw}" is not a URL`);
  }
  if (url.username || url.password) {
    throw new Error(
      "Cannot resolve digests: the registry endpoint contains credentials; use dockerConfigJson",
    );
  }
  if (url.protocol === "http:" && !opts.insecure) {
    throw new Error(
      `Cannot resolve digests: endpoint ${raw} is plain http; set registry.insecure: true to allow it`,
    );
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new Error(`Cannot resolve digests: endpoint ${raw} is not http(s)`);
  }
  return url;
}

export async function resolveDigests(
  repositories: readonly string[],
  tag: string,
  opts: ResolveOptions,
): Promise<Map<string, DigestResult>> {
  const endpoint = checkedEndpoint(tag, opts).href.replace(/\/+$/, "");
  const repos = [...new Set(repositories)];
  const paths = new Map(repos.map((r) => [r, repositoryPath(opts.host, r)]));
  const results = new Map<string, DigestResult>();
  if (repos.length === 0) return results;
  const ctx: HttpContext = {
    fetch: opts.fetch ?? fetch,
    telemetry: opts.telemetry,
    signal: opts.signal,
    requestTimeoutMs: opts.requestTimeoutMs,
    insecure: opts.insecure ?? false,
    ca: opts.ca,
    secrets: opts.credentials ? basicSecrets(opts.credentials.username, opts.credentials.password) : [],
  };
  let authorization: string | undefined;
  try {
    authorization = await authorize(ctx, {
      endpoint,
      paths: [...paths.values()],
      credentials: opts.credentials,
      token: opts.token,
    });
  } catch (err) {
    // A token endpoint that is not there (404) is the configuration's fault too.
    const failure = blameConfiguredToken(opts, asRegistryError(err), ["not_found"]);
    noteRateLimit(opts, failure);
    for (const repo of repos) results.set(repo, fail(opts, repo, tag, failure));
    return results;
  }
  await headAll(ctx, { ...opts, endpoint, tag, paths, authorization }, results);
  // Completion order is arbitrary; callers and logs get the configured order.
  return new Map(repos.map((r) => [r, results.get(r) as DigestResult]));
}

/** One HEAD per repository, bounded; the first 429 turns every later one into a skip. */
async function headAll(
  ctx: HttpContext,
  opts: ResolveOptions & {
    endpoint: string;
    tag: string;
    paths: Map<string, string>;
    authorization?: string;
  },
  results: Map<string, DigestResult>,
): Promise<void> {
  let stopped = false;
  await forEachBounded([...opts.paths.keys()], opts.concurrency ?? DEFAULT_CONCURRENCY, async (repo) => {
    if (stopped) return void results.set(repo, skipped(opts, repo));
    if (opts.signal.aborted) {
      // The tick is over: say so per image instead of sending requests that abort at once.
      const why = (opts.signal.reason as Error | undefined)?.message ?? "the tick was stopped";
      const late = new RegistryError("timeout", `not requested: ${why}`);
      return void results.set(repo, fail(opts, repo, opts.tag, late));
    }
    try {
      const path = opts.paths.get(repo) as string;
      const digest = await headDigest(ctx, { ...opts, path });
      results.set(repo, { ok: true, digest });
    } catch (err) {
      const failure = blameConfiguredToken(opts, asRegistryError(err));
      if (failure.reason === "rate_limited" && !stopped) {
        stopped = true;
        noteRateLimit(opts, failure);
      }
      results.set(repo, fail(opts, repo, opts.tag, failure));
    }
  });
}

function asRegistryError(err: unknown): RegistryError {
  if (err instanceof RegistryError) return err;
  // Not a registry answer: a bug or an unexpected runtime error. Keep it per image, never silent.
  return new RegistryError("network", `unexpected error: ${(err as Error)?.message ?? String(err)}`, {
    cause: err,
  });
}

/**
 * With a configured token endpoint, a refusal may be the configuration's fault (a wrong realm or
 * service gives a token the registry does not accept): say so, and how to fall back.
 */
function blameConfiguredToken(
  opts: ResolveOptions,
  err: RegistryError,
  also: readonly RegistryFailure[] = [],
): RegistryError {
  if (!opts.token || !["unauthorized", "forbidden", ...also].includes(err.reason)) return err;
  const where = `realm ${opts.token.realm}${opts.token.service ? `, service ${opts.token.service}` : ""}`;
  return new RegistryError(
    err.reason,
    `${err.message} (the token came from registry.token (${where}); check it, or remove registry.token to let the registry's challenge choose)`,
    { status: err.status, code: err.code, rateLimit: err.rateLimit, cause: err },
  );
}

function fail(opts: ResolveOptions, repo: string, tag: string, err: RegistryError): DigestResult {
  opts.log.warn(`cannot resolve ${opts.host}/${repo}:${tag}: ${err.message}`, {
    registry: opts.host,
    repository: repo,
    reason: err.reason,
    status: err.status,
    code: err.code,
  });
  return { ok: false, reason: err.reason, message: err.message };
}

function skipped(opts: ResolveOptions, repo: string): DigestResult {
  const message = `not requested: ${opts.host} answered 429 earlier in this tick`;
  opts.log.warn(`skipping ${opts.host}/${repo}: ${message}`, { registry: opts.host, repository: repo });
  return { ok: false, reason: "skipped_rate_limited", message };
}

function noteRateLimit(opts: ResolveOptions, err: RegistryError): void {
  if (err.reason !== "rate_limited") return;
  opts.log.warn(`registry ${opts.host} is rate limiting (429); no further requests to it this tick`, {
    registry: opts.host,
    retry_after: err.rateLimit?.retryAfter,
    ratelimit_remaining: err.rateLimit?.remaining,
    ratelimit_limit: err.rateLimit?.limit,
  });
}

/** Runs `fn` over `items` with at most `limit` in flight; a tiny pool, not worth a dependency. */
async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
