// The HEADs of one registry in one tick, with its quota in mind: the first goes alone (and a
// 401 challenge on it, after an open API root or with an authorization from a remembered answer,
// is answered once); the rest follow a few at a time; a 429 aborts the ones in flight and sends
// no more.
import { answerChallenge } from "./auth.ts";
import { RegistryError, type RegistryFailure } from "./errors.ts";
import type { HttpContext } from "./http.ts";
import { headDigest } from "./manifest.ts";
import type { DigestResult, Lookup, ResolveOptions } from "./results.ts";

export const DEFAULT_CONCURRENCY = 8;

/**
 * One HEAD per repository. The first goes alone; the rest follow, `concurrency` at a time, once
 * it answered with anything but 429. A 429 aborts every HEAD still in flight and sends no more:
 * the quota belongs to the workloads' own pulls. Returns the 429's error, if one came, and
 * whether the first HEAD's challenge was followed (a remembered answer that did not hold).
 */
export async function headAll(
  ctx: HttpContext,
  opts: HeadOptions,
  results: Map<string, DigestResult>,
): Promise<{ limited?: RegistryError; followed: boolean }> {
  const quota = new AbortController();
  const run: HeadRun = {
    ctx: { ...ctx, signal: AbortSignal.any([ctx.signal, quota.signal]) },
    tickSignal: ctx.signal,
    quota,
    opts,
    results,
  };
  const [first, ...rest] = [...opts.lookups.keys()];
  if (first === undefined) return { followed: false };
  // An open API root gave no challenge; a HEAD's 401 may, and is followed once. So is one
  // refusing a token got the way an earlier tick's answer said: the registry's word now wins.
  const challenged = await headOne(run, first, opts.authorization === undefined || opts.fromMemory === true);
  if (challenged) {
    if (!(await followChallenge(run, challenged))) return { limited: run.limited, followed: true };
    await headOne(run, first);
  }
  await forEachBounded(rest, opts.concurrency ?? DEFAULT_CONCURRENCY, (repo) => headOne(run, repo));
  return { limited: run.limited, followed: challenged !== undefined };
}

/**
 * Answers a HEAD's challenge with the configured credentials (one token request with every
 * repository's scope, reused by the later HEADs). False, with every image failed, if it cannot.
 */
async function followChallenge(run: HeadRun, challenged: RegistryError): Promise<boolean> {
  const { opts } = run;
  try {
    const paths = [...new Set([...opts.lookups.values()].map((l) => l.path))];
    const authorization = await answerChallenge(run.ctx, challenged.challenge ?? "", {
      paths,
      credentials: opts.credentials,
    });
    run.opts = { ...opts, authorization };
    return true;
  } catch (err) {
    const failure = blameMissingCredential(opts, asRegistryError(err));
    if (failure.reason === "rate_limited") run.limited = failure;
    for (const [id, l] of opts.lookups) run.results.set(id, fail(opts, l, failure));
    return false;
  }
}

/** One tag of one repository to resolve, and its path on the wire. */
export interface PathLookup {
  repository: string;
  tag: string;
  path: string;
}

export type HeadOptions = ResolveOptions & {
  endpoint: string;
  /** By lookup id (`<repository>:<tag>`), in the order asked. */
  lookups: Map<string, PathLookup>;
  authorization?: string;
  /** The authorization came from an answer remembered from an earlier tick. */
  fromMemory?: boolean;
};

interface HeadRun {
  /** The tick's context with the 429 abort folded into its signal. */
  ctx: HttpContext;
  tickSignal: AbortSignal;
  quota: AbortController;
  /** Gains an authorization when a HEAD's challenge was followed. */
  opts: HeadOptions;
  results: Map<string, DigestResult>;
  /** The 429 that stopped this registry's requests. */
  limited?: RegistryError;
}

/**
 * One HEAD, its result recorded. With `followable`, a 401 that carries a challenge is returned
 * instead of recorded, so that the caller can answer it and ask again.
 */
async function headOne(run: HeadRun, id: string, followable = false): Promise<RegistryError | undefined> {
  const { opts, results } = run;
  const lookup = opts.lookups.get(id) as PathLookup;
  if (run.limited) return void results.set(id, stoppedBy429(opts, lookup, "not requested"));
  if (run.tickSignal.aborted) {
    // The tick is over: say so per image instead of sending requests that abort at once.
    const why = (run.tickSignal.reason as Error | undefined)?.message ?? "the tick was stopped";
    const late = new RegistryError("timeout", `not requested: ${why}`);
    return void results.set(id, fail(opts, lookup, late));
  }
  try {
    const digest = await headDigest(run.ctx, { ...opts, path: lookup.path, tag: lookup.tag });
    results.set(id, { ok: true, digest });
  } catch (err) {
    // Aborted because another HEAD was answered 429, not because the tick ran out of time.
    if (run.limited && !run.tickSignal.aborted)
      return void results.set(id, stoppedBy429(opts, lookup, "aborted"));
    const blamed = blameCredential(opts, blameConfiguredToken(opts, asRegistryError(err)));
    const failure = blameMissingCredential(opts, blamed);
    if (followable && failure.status === 401 && failure.challenge) return failure;
    if (failure.reason === "rate_limited" && !run.limited) {
      run.limited = failure;
      run.quota.abort(new Error(`${opts.host} answered 429`));
      // Logged once, with its parsed Retry-After, by resolveDigests.
    }
    results.set(id, fail(opts, lookup, failure));
  }
  return undefined;
}

/**
 * A 401 to a HEAD that carried our credential (as Basic, or as the token it got): say that the
 * credential was refused, for this host.
 */
function blameCredential(opts: HeadOptions, err: RegistryError): RegistryError {
  if (err.status !== 401 || !opts.credentials || !opts.authorization) return err;
  const basic = opts.authorization.startsWith("Basic ");
  const which = opts.credentials.origin ?? `the dockerconfigjson credential for ${opts.host}`;
  const what = basic
    ? `it refused ${opts.credentials.origin ?? "the dockerconfigjson credential"}`
    : `it refused the token ${which} got: that credential may not pull this repository`;
  return new RegistryError("unauthorized", `${err.message}: ${what}`, {
    status: 401,
    code: err.code,
    challenge: err.challenge,
    cause: err,
  });
}

/**
 * A 401 from a registry that was sent no credential: say that none is configured for its host,
 * and where to configure one (the runtime knows the field), not only "needs credentials".
 */
export function blameMissingCredential(opts: ResolveOptions, err: RegistryError): RegistryError {
  if (err.status !== 401 || opts.credentials) return err;
  const why = opts.noCredential ?? `no credential is configured for ${opts.host}`;
  return new RegistryError("unauthorized", `${err.message}: ${why}`, {
    status: 401,
    code: err.code,
    challenge: err.challenge,
    cause: err,
  });
}

/** An image whose HEAD a 429 from its registry stopped: never sent, or aborted in flight. */
function stoppedBy429(opts: ResolveOptions, l: Lookup, how: "not requested" | "aborted"): DigestResult {
  const message = `${how}: ${opts.host} answered 429 in this tick`;
  opts.log.warn(`skipping ${opts.host}/${l.repository}:${l.tag}: ${message}`, {
    registry: opts.host,
    repository: l.repository,
    reason: "rate_limited",
  });
  return { ok: false, reason: "rate_limited", message };
}

export function asRegistryError(err: unknown): RegistryError {
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
export function blameConfiguredToken(
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

export function fail(opts: ResolveOptions, l: Lookup, err: RegistryError): DigestResult {
  opts.log.warn(`cannot resolve ${opts.host}/${l.repository}:${l.tag}: ${err.message}`, {
    registry: opts.host,
    repository: l.repository,
    reason: err.reason,
    status: err.status,
    code: err.code,
  });
  return { ok: false, reason: err.reason, message: err.message };
}

/** Runs `fn` over `items` with at most `limit` in flight; a tiny pool, not worth a dependency. */
async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
