// Reading a registry's answers: its auth challenge, its error bodies and its rate-limit headers.
import { scrub } from "../scrub.ts";
import { parseWwwAuthenticate } from "./challenge.ts";
import { failureForStatus, type RateLimitInfo, RegistryError, registryErrorCode } from "./errors.ts";
import type { HttpResponse } from "./http.ts";

export function challengeOf(res: Pick<HttpResponse, "headers">): {
  bearer?: Record<string, string>;
  basic?: Record<string, string>;
} {
  const challenges = parseWwwAuthenticate(res.headers.get("www-authenticate") ?? "");
  return {
    bearer: challenges.find((c) => c.scheme === "bearer")?.params,
    basic: challenges.find((c) => c.scheme === "basic")?.params,
  };
}

export function rateLimitOf(res: HttpResponse): RateLimitInfo | undefined {
  const info: RateLimitInfo = {
    retryAfter: res.headers.get("retry-after") ?? undefined,
    remaining: res.headers.get("ratelimit-remaining") ?? undefined,
    limit: res.headers.get("ratelimit-limit") ?? undefined,
  };
  if (!info.retryAfter && !info.remaining && !info.limit) return undefined;
  const date = res.headers.get("date");
  return date ? { ...info, date } : info;
}

/** A RegistryError for a non-success answer, keeping the registry's own error code if any. */
export function errorFromResponse(res: HttpResponse, what: string): RegistryError {
  const reason = failureForStatus(res.status);
  const body = registryErrorCode(res.body);
  let message = `${what} answered ${res.status}`;
  if (body) message += ` ${body.code}${body.message ? `: ${body.message}` : ""}`;
  if (res.status === 401) {
    const error = challengeOf(res).bearer?.error;
    // Docker Hub answers 401 for a missing repository as well as a private one, by design.
    message += error ? ` (${error}; the repository may not exist or needs credentials)` : "";
  }
  // The body was scrubbed on arrival; the challenge's error text is a header, quoted here.
  return new RegistryError(reason, scrub(message, res.secrets), {
    status: res.status,
    code: body?.code,
    rateLimit: res.status === 429 ? rateLimitOf(res) : undefined,
    challenge: res.status === 401 ? (res.headers.get("www-authenticate") ?? undefined) : undefined,
  });
}
