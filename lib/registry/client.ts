// Resolves the current digests of tags in many repositories of one registry, within the
// request budget: one probe, at most one token request, one HEAD per repository and tag.
// Failures are per image; only a 429 stops the rest, because the registry's quota belongs to the
// workloads' own pulls and every further request would spend it: the first HEAD goes alone, a
// 429 aborts the HEADs in flight, and a Retry-After is returned for the tick to keep.
import { basicSecrets } from "../scrub.ts";
import { mark } from "../startup-timing.ts";
import { type Authorized, authorize } from "./auth.ts";
import type { RegistryError } from "./errors.ts";
import {
  asRegistryError,
  blameConfiguredToken,
  blameMissingCredential,
  DEFAULT_CONCURRENCY,
  fail,
  headAll,
} from "./heads.ts";
import type { HttpContext } from "./http.ts";
import { registryEndpoint, repositoryPath, TAG_RE } from "./reference.ts";
import { rememberedAnswer, toRemember } from "./remembered.ts";
import { type DigestResult, DigestResults, type Lookup, lookupId, type ResolveOptions } from "./results.ts";
import { type RetryAfter, retryAfterTime } from "./retry-after.ts";

export type { RegistryFailure } from "./errors.ts";
export { type DigestResult, DigestResults, type Lookup, lookupId, type ResolveOptions } from "./results.ts";
export type { RetryAfter } from "./retry-after.ts";

/** Checks options up front; these are configuration errors, thrown before any request. */
function checkedEndpoint(tags: readonly string[], opts: ResolveOptions): URL {
  for (const tag of tags)
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

/** One tag of many repositories of one registry, by repository. */
export async function resolveDigests(
  repositories: readonly string[],
  tag: string,
  opts: ResolveOptions,
): Promise<DigestResults> {
  const repos = [...new Set(repositories)];
  const byId = await resolveLookups(
    repos.map((repository) => ({ repository, tag })),
    opts,
  );
  const out = new DigestResults(
    repos.map((r) => [r, byId.get(lookupId({ repository: r, tag })) as DigestResult]),
  );
  if (byId.retryAfter) out.retryAfter = byId.retryAfter;
  if (byId.remember !== undefined) out.remember = byId.remember;
  return out;
}

/**
 * Tags of repositories of one registry (each image its own tag), by lookup id
 * (`<repository>:<tag>`): one HEAD each, one token request carrying every repository's scope.
 */
export async function resolveLookups(
  lookups: readonly Lookup[],
  given: ResolveOptions,
): Promise<DigestResults> {
  let opts = given;
  const endpoint = checkedEndpoint(
    lookups.map((l) => l.tag),
    opts,
  ).href.replace(/\/+$/, "");
  const paths = new Map(
    lookups.map((l) => [lookupId(l), { ...l, path: repositoryPath(opts.host, l.repository) }]),
  );
  const repos = [...paths.values()];
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
    secrets: opts.credentials ? basicSecrets(opts.credentials.username, opts.credentials.password) : [],
  };
  if (opts.identity) {
    const login = await loginFirst(ctx, opts, repos, results);
    if (!login) return results;
    opts = login;
  }
  let authorized: Authorized;
  mark("registry-start");
  try {
    authorized = await authorize(ctx, {
      endpoint,
      paths: [...new Set(repos.map((l) => l.path))],
      credentials: opts.credentials,
      token: opts.token,
      remembered: opts.token ? undefined : rememberedAnswer(opts.storedAnswer, endpoint),
    });
  } catch (err) {
    // A token endpoint that is not there (404) is the configuration's fault too.
    const failure = blameMissingCredential(
      opts,
      blameConfiguredToken(opts, asRegistryError(err), ["not_found"]),
    );
    results.retryAfter = noteRateLimit(opts, failure);
    for (const l of repos) results.set(lookupId(l), fail(opts, l, failure));
    return results;
  }
  mark("registry-authorized");
  const { authorization, remembered, answer } = authorized;
  // A token got the way a remembered answer said may be refused (a renamed service): the first
  // HEAD's challenge is then followed once. Open and Basic are followed as after a live probe.
  const fromMemory = remembered && authorization?.startsWith("Bearer ") === true;
  const heads = { ...opts, endpoint, lookups: paths, authorization, fromMemory };
  const { limited, followed } = await headAll(ctx, heads, results);
  // Completion order is arbitrary; callers and logs get the configured order.
  const ordered = new DigestResults([...paths.keys()].map((id) => [id, results.get(id) as DigestResult]));
  ordered.retryAfter = limited && noteRateLimit(opts, limited);
  // The API root's answer for the next tick: this tick's, or none once a remembered one failed.
  if (answer !== undefined) ordered.remember = toRemember(answer, endpoint);
  else if (fromMemory && followed) ordered.remember = null;
  return ordered;
}

/**
 * `auth: aws`: the registry's credentials from the cloud's identity, once, with their secrets
 * added to what is scrubbed. Refused: every image of this registry unresolved, saying what the
 * identity lacks; undefined.
 */
async function loginFirst(
  ctx: HttpContext,
  opts: ResolveOptions,
  repos: readonly Lookup[],
  results: DigestResults,
): Promise<ResolveOptions | undefined> {
  try {
    const login = await (opts.identity as NonNullable<ResolveOptions["identity"]>)(ctx);
    const basic = basicSecrets(login.credentials.username, login.credentials.password);
    ctx.secrets = [...basic, ...login.secrets];
    return { ...opts, credentials: login.credentials };
  } catch (err) {
    const failure = asRegistryError(err);
    for (const l of repos) results.set(lookupId(l), fail(opts, l, failure));
    return undefined;
  }
}

function waiting(opts: ResolveOptions): boolean {
  return opts.notBefore !== undefined && (opts.now ?? Date.now)() < opts.notBefore.getTime();
}

/** The registry asked to wait: no request at all, one line for the registry, each image unresolved. */
function held(opts: ResolveOptions, repos: readonly Lookup[]): DigestResults {
  const until = (opts.notBefore as Date).toISOString();
  const message = `not requested: ${opts.host} asked (Retry-After) not to be called before ${until}`;
  opts.log.warn(`registry ${opts.host} is rate limiting; not calling it before ${until}`, {
    registry: opts.host,
    retry_after: until,
  });
  const results = new DigestResults();
  for (const l of repos) results.set(lookupId(l), { ok: false, reason: "rate_limited", message });
  return results;
}

/** Logs a 429 once per registry and returns its parsed Retry-After, if readable. */
function noteRateLimit(opts: ResolveOptions, err: RegistryError): RetryAfter | undefined {
  if (err.reason !== "rate_limited") return undefined;
  const info = err.rateLimit;
  const retryAfter = retryAfterTime(info?.retryAfter, info?.date, Date.now());
  opts.log.warn(`registry ${opts.host} is rate limiting (429); no further requests to it this tick`, {
    registry: opts.host,
    retry_after: info?.retryAfter,
    retry_after_until: retryAfter?.at.toISOString(),
    ratelimit_remaining: info?.remaining,
    ratelimit_limit: info?.limit,
  });
  return retryAfter;
}
