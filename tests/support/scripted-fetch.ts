// An HttpContext whose fetch answers from a function and keeps every request it was given, for
// the unit tests of the clouds' identity logins (lib/registry/{gcp,azure,cloud}.test.ts,
// lib/registry/aws/ecr.test.ts): what was asked is asserted, no server is started.
import type { HttpContext } from "../../lib/registry/http.ts";
import { noopTelemetry } from "../../lib/telemetry.ts";

export type Seen = { url: string; method: string; headers: Headers; body: string };

export function scriptedFetch(answer: (r: Seen) => Response): { ctx: HttpContext; seen: Seen[] } {
  const seen: Seen[] = [];
  const fake = async (input: URL | string, init?: RequestInit) => {
    const r = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      body: String(init?.body ?? ""),
    };
    seen.push(r);
    return answer(r);
  };
  const ctx: HttpContext = {
    fetch: fake as typeof fetch,
    telemetry: noopTelemetry(),
    signal: new AbortController().signal,
    requestTimeoutMs: 1000,
    insecure: false,
  };
  return { ctx, seen };
}
