// At most one unauthenticated probe (GET /v2/) and one token request per registry per tick.
// The probe tells us which scheme the registry wants, unless the token endpoint is configured;
// the token request asks for pull on every repository at once (one `scope` parameter each), so
// 50 images still cost one token.
import { encodeBase64Utf8 } from "../base64.ts";
import { checkTokenResponse } from "../checks/checks.generated.ts";
import { lazy, parseChecked } from "../issues.ts";
import type { BasicCredentials } from "./credentials.ts";
import { RegistryError } from "./errors.ts";
import { type HttpContext, send } from "./http.ts";
import { OPEN } from "./remembered.ts";
import { challengeOf, errorFromResponse } from "./response.ts";

/** How to authorize the manifest requests that follow; undefined means anonymous. */
export type Authorization = string | undefined;

/** A token endpoint's answer (compiled into lib/checks/checks.generated.ts). */
export const tokenResponseSchema = lazy((z) =>
  z.object({ token: z.optional(z.string()), access_token: z.optional(z.string()) }),
);

export function basicHeader(creds: BasicCredentials): string {
  return `Basic ${encodeBase64Utf8(`${creds.username}:${creds.password}`)}`;
}

/** A Bearer token endpoint known in advance (config `registry.token`). */
export interface TokenEndpoint {
  realm: string;
  service?: string;
}

/** How the manifest requests are authorized, and what the API root answered if it was asked. */
export interface Authorized {
  authorization: Authorization;
  /** `open`, or the API root's challenge: set when this tick probed. */
  answer?: string;
  /** The authorization came from an answer remembered from an earlier tick. */
  remembered: boolean;
}

/**
 * Returns the Authorization value for manifest requests: from the configured token endpoint
 * without a probe; from the API root's answer remembered from an earlier tick (remembered.ts),
 * without a probe; or from the challenge that the registry's API root answers. A remembered
 * answer that no longer works (its token request fails) is asked again once, in this tick; a
 * 429 or the tick's own deadline is not.
 */
export async function authorize(
  ctx: HttpContext,
  opts: {
    endpoint: string;
    paths: readonly string[];
    credentials?: BasicCredentials;
    token?: TokenEndpoint;
    /** The remembered answer (`open` or a challenge), already checked against the endpoint. */
    remembered?: string;
  },
): Promise<Authorized> {
  if (opts.token) {
    const params: Record<string, string> = { realm: opts.token.realm };
    if (opts.token.service) params.service = opts.token.service;
    return { authorization: `Bearer ${await fetchToken(ctx, { ...opts, params })}`, remembered: false };
  }
  if (opts.remembered === OPEN) return { authorization: undefined, remembered: true };
  let stale: unknown;
  if (opts.remembered !== undefined) {
    try {
      return { authorization: await answerChallenge(ctx, opts.remembered, opts), remembered: true };
    } catch (err) {
      if (ctx.signal.aborted || (err as RegistryError).reason === "rate_limited") throw err;
      stale = err;
    }
  }
  const probe = await send(ctx, { method: "GET", url: new URL(`${opts.endpoint}/v2/`), headers: {} });
  if (probe.status === 200) return { authorization: undefined, answer: OPEN, remembered: false };
  if (probe.status !== 401) throw errorFromResponse(probe, "the registry's API root");
  const answer = probe.headers.get("www-authenticate") ?? "";
  // The same challenge again: its token request just failed, and asking twice would not help.
  if (stale !== undefined && answer === opts.remembered) throw stale;
  return { authorization: await answerChallenge(ctx, answer, opts), answer, remembered: false };
}

/**
 * The Authorization for a 401's challenge (the API root's, or a HEAD's after an open API root):
 * one token request with every repository's scope, or the Basic credentials.
 */
export async function answerChallenge(
  ctx: HttpContext,
  header: string,
  opts: { paths: readonly string[]; credentials?: BasicCredentials },
): Promise<string> {
  const { bearer, basic } = challengeOf({ headers: new Headers({ "www-authenticate": header }) });
  if (bearer) return `Bearer ${await fetchToken(ctx, { ...opts, params: bearer })}`;
  if (basic && opts.credentials) return basicHeader(opts.credentials);
  const why = basic ? "it asks for Basic credentials" : "its challenge is not Bearer or Basic";
  throw new RegistryError("unauthorized", `Cannot authenticate to the registry: ${why}`, { status: 401 });
}

async function fetchToken(
  ctx: HttpContext,
  opts: { paths: readonly string[]; credentials?: BasicCredentials; params: Record<string, string> },
): Promise<string> {
  const url = tokenUrl(opts.params.realm, opts.params.service, opts.paths);
  const res = await send(ctx, {
    method: "GET",
    url,
    headers: { Accept: "application/json" },
    // Credentials go to the token endpoint the registry named, and only there.
    authorization: opts.credentials ? basicHeader(opts.credentials) : undefined,
  });
  if (res.status === 401 && opts.credentials) {
    // Say which credential: "answered 401" alone sends people looking at the registry.
    const err = errorFromResponse(res, "the token endpoint");
    const which = opts.credentials.origin ?? "the dockerconfigjson credential";
    throw new RegistryError("unauthorized", `${err.message}: it refused ${which}`, {
      status: 401,
      code: err.code,
    });
  }
  if (res.status !== 200) throw errorFromResponse(res, "the token endpoint");
  let json: unknown;
  try {
    json = JSON.parse(res.body);
  } catch {
    throw new RegistryError("server_error", "the token endpoint did not answer JSON", { status: 200 });
  }
  const parsed = parseChecked(checkTokenResponse, tokenResponseSchema, json);
  const token = parsed.ok ? parsed.value.token || parsed.value.access_token : undefined;
  if (!token) {
    throw new RegistryError(
      "server_error",
      "the token endpoint's answer has neither token nor access_token",
      {
        status: 200,
      },
    );
  }
  // `token` is the documented field; `access_token` is the OAuth2 spelling some servers use alone.
  return token;
}

/**
 * The token request's URL: the realm with `service` and one `scope` per repository, as
 * URLSearchParams's set and append write them. A realm with a query of its own goes through
 * URLSearchParams itself (set replaces a service it names); the usual bare realm gets the same
 * text written here, because URLSearchParams's first use costs a tick about 0.4 ms on its way
 * from the store's answer to the registry.
 */
export function tokenUrl(
  realm: string | undefined,
  service: string | undefined,
  paths: readonly string[],
): URL {
  const url = realmUrl(realm);
  if (url.search) {
    if (service) url.searchParams.set("service", service);
    for (const path of paths) url.searchParams.append("scope", `repository:${path}:pull`);
    return url;
  }
  const query = paths.map((path) => `scope=${formEncode(`repository:${path}:pull`)}`);
  if (service) query.unshift(`service=${formEncode(service)}`);
  url.search = query.join("&");
  return url;
}

/** application/x-www-form-urlencoded, as URLSearchParams serializes a value. */
const FORM_ONLY = /[!'()~]|%20/g;
function formEncode(value: string): string {
  return encodeURIComponent(value.toWellFormed()).replace(FORM_ONLY, (c) =>
    c === "%20" ? "+" : `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function realmUrl(realm: string | undefined): URL {
  if (!realm) throw new RegistryError("unauthorized", "the registry's Bearer challenge names no realm");
  try {
    const url = new URL(realm);
    url.username = ""; // the registry's word is not a reason to put credentials in a URL
    url.password = "";
    return url;
  } catch {
    throw new RegistryError("unauthorized", `the registry's Bearer realm is not a URL: ${realm}`);
  }
}
