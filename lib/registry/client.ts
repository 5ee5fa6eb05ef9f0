// Resolves the current digest of one tag in many repositories of one registry, within the
// SPEC's request budget: one probe, at most one token request, one HEAD per repository.
// Failures are per image; only a 429 stops the rest, because the registry's quota belongs to the
// workloads' own pulls and every further request would spend it: the first HEAD goes alone, a
// 429 aborts the HEADs in flight, and a Retry-After is returned for the tick to keep.
import type { Logger } from "../log.ts";
import type { Telemetry } from "../telemetry.ts";
import { authorize, type TokenEndpoint } from "./auth.ts";
import type { BasicCredentials } from "./credentials.ts";
import { RegistryError, type RegistryFailure } from "./errors.ts";
import type { HttpContext } from "./http.ts";
import { headDigest } from "./manifest.ts";
import { registryEndpoint, repositoryPath, TAG_RE } from "./reference.ts";
import { parseRetryAfter, type RetryAfter } from "./retry-after.ts";

export type { RegistryFailure } from "./errors.ts";
export type DigestResult =
  | { ok: true; digest: string }
  | { ok: false; reason: RegistryFailure; message: string };
export type { RetryAfter } from "./retry-after.ts";

/** Per repository, in the order asked; plus the 429's Retry-After when the registry sent one. */
export class DigestResults extends Map<string, DigestResult> {
  /** Set when a 429 carried a readable Retry-After: store it, and call nothing before `at`. */
  retryAfter?: RetryAfter;
}

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
   * The registry asked (an earlier 429's Retry-After) not to be called before this time: while
   * `now` is before it, nothing is sent and every repository is `rate_limited`.
   */
  notBefore?: Date;
  /** Clock for `notBefore` (ms); defaults to Date.now. The tick passes its API-server clock. */
  now?: () => number;
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
): Promise<DigestResults> {
  const endpoint = checkedEndpoint(tag, opts).href.replace(/\/+$/, "");
  const repos = [...new Set(repositories)];
  const paths = new Map(repos.map((r) => [r, repositoryPath(opts.host, r)]));
  const results = new DigestResults();
  if (repos.length === 0) return results;
  if (waiting(opts)) return held(opts, repos);
  const ctx: HttpContext = {
    fetch: opts.fetch ?? fetch,
    telemetry: opts.telemetry,
    signal: opts.signal,
    requestTimeoutMs: opts.requestTimeoutMs,
    insecure: opts.insecure ?? false,
    ca: opts.ca,
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
    results.retryAfter = noteRateLimit(opts, failure);
    for (const repo of repos) results.set(repo, fail(opts, repo, tag, failure));
    return results;
  }
  const limited = await headAll(ctx, { ...opts, endpoint, tag, paths, authorization }, results);
  // Completion order is arbitrary; callers and logs get the configured order.
  const ordered = new DigestResults(repos.map((r) => [r, results.get(r) as DigestResult]));
  ordered.retryAfter = limited && noteRateLimit(opts, limited);
  return ordered;
}

function waiting(opts: ResolveOptions): boolean {
  return opts.notBefore !== undefined && (opts.now ?? Date.now)() < opts.notBefore.getTime();
}

/** The registry asked to wait: no request at all, one line for the registry, each image unresolved. */
function held(opts: ResolveOptions, repos: readonly string[]): DigestResults {
  const until = (opts.notBefore as Date).toISOString();
  const message = `not requested: ${opts.host} asked (Retry-After) not to be called before ${until}`;
  opts.log.warn(`registry ${opts.host} is rate limiting; not calling it before ${until}`, {
    registry: opts.host,
    retry_after: until,
  });
  const results = new DigestResults();
  for (const repo of repos) results.set(repo, { ok: false, reason: "rate_limited", message });
  return results;
}

/**
 * One HEAD per repository. The first goes alone; the rest follow, `concurrency` at a time, once
 * it answered with anything but 429. A 429 aborts every HEAD still in flight and sends no more:
 * the quota belongs to the workloads' own pulls. Returns the 429's error, if one came.
 */
async function headAll(
  ctx: HttpContext,
  opts: HeadOptions,
  results: Map<string, DigestResult>,
): Promise<RegistryError | undefined> {
  const quota = new AbortController();
  const run: HeadRun = {
    ctx: { ...ctx, signal: AbortSignal.any([ctx.signal, quota.signal]) },
    tickSignal: ctx.signal,
    quota,
    opts,
    results,
  };
  const [first, ...rest] = [...opts.paths.keys()];
  if (first === undefined) return undefined;
  await headOne(run, first);
  await forEachBounded(rest, opts.concurrency ?? DEFAULT_CONCURRENCY, (repo) => headOne(run, repo));
  return run.limited;
}

type HeadOptions = ResolveOptions & {
  endpoint: string;
  tag: string;
  paths: Map<string, string>;
  authorization?: string;
};

interface HeadRun {
  /** The tick's context with the 429 abort folded into its signal. */
  ctx: HttpContext;
  tickSignal: AbortSignal;
  quota: AbortController;
  opts: HeadOptions;
  results: Map<string, DigestResult>;
  /** The 429 that stopped this registry's requests. */
  limited?: RegistryError;
}

async function headOne(run: HeadRun, repo: string): Promise<void> {
  const { opts, results } = run;
  if (run.limited) return void results.set(repo, stoppedBy429(opts, repo, "not requested"));
  if (run.tickSignal.aborted) {
    // The tick is over: say so per image instead of sending requests that abort at once.
    const why = (run.tickSignal.reason as Error | undefined)?.message ?? "the tick was stopped";
    const late = new RegistryError("timeout", `not requested: ${why}`);
    return void results.set(repo, fail(opts, repo, opts.tag, late));
  }
  try {
    const path = opts.paths.get(repo) as string;
    const digest = await headDigest(run.ctx, { ...opts, path });
    results.set(repo, { ok: true, digest });
  } catch (err) {
    // Aborted because another HEAD was answered 429, not because the tick ran out of time.
    if (run.limited && !run.tickSignal.aborted)
      return void results.set(repo, stoppedBy429(opts, repo, "aborted"));
    const failure = blameConfiguredToken(opts, asRegistryError(err));
    if (failure.reason === "rate_limited" && !run.limited) {
      run.limited = failure;
      run.quota.abort(new Error(`${opts.host} answered 429`));
      // Logged once, with its parsed Retry-After, by resolveDigests.
    }
    results.set(repo, fail(opts, repo, opts.tag, failure));
  }
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

/** An image whose HEAD a 429 from its registry stopped: never sent, or aborted in flight. */
function stoppedBy429(opts: ResolveOptions, repo: string, how: "not requested" | "aborted"): DigestResult {
  const message = `${how}: ${opts.host} answered 429 in this tick`;
  opts.log.warn(`skipping ${opts.host}/${repo}: ${message}`, {
    registry: opts.host,
    repository: repo,
    reason: "rate_limited",
  });
  return { ok: false, reason: "rate_limited", message };
}

/** Logs a 429 once per registry and returns its parsed Retry-After, if readable. */
function noteRateLimit(opts: ResolveOptions, err: RegistryError): RetryAfter | undefined {
  if (err.reason !== "rate_limited") return undefined;
  const info = err.rateLimit;
  const retryAfter = parseRetryAfter(info?.retryAfter, info?.date, Date.now());
  opts.log.warn(`registry ${opts.host} is rate limiting (429); no further requests to it this tick`, {
    registry: opts.host,
    retry_after: info?.retryAfter,
    retry_after_until: retryAfter?.at.toISOString(),
    ratelimit_remaining: info?.remaining,
    ratelimit_limit: info?.limit,
  });
  return retryAfter;
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
