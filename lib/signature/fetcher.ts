// The tick's signature look-ups over the registry's own HTTP layer (spans, timeouts, redirects
// without credentials to another origin): one authorization per registry for every repository
// asked (the remembered API root answer, else its probe; one token request with each
// repository's pull scope), then the verifier's GETs. Only images whose new build is due get
// here, so a no-op tick sends none of these requests.
import type { Logger } from "../log.ts";
import { authorize } from "../registry/auth.ts";
import type { BasicCredentials } from "../registry/credentials.ts";
import { type HttpContext, send } from "../registry/http.ts";
import { registryEndpoint, repositoryPath } from "../registry/reference.ts";
import { rememberedAnswer } from "../registry/remembered.ts";
import type { Telemetry } from "../telemetry.ts";
import type { PublicKey } from "./keys.ts";
import type { RegistryReader, SignatureVerdict } from "./reader.ts";
import { verifySignature } from "./verify.ts";

/** One build to check: the image's key, repository, the digest due and its policy's keys. */
export interface SignatureRequest {
  key: string;
  repository: string;
  digest: string;
  keys: readonly PublicKey[];
}

export interface FetchOptions {
  host: string;
  endpoint?: string;
  insecure?: boolean;
  credentials?: BasicCredentials;
  token?: { realm: string; service?: string };
  /** The API root's answer an earlier tick stored, when it is one for this registry. */
  storedAnswer?: string;
  requestTimeoutMs: number;
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  fetch?: typeof fetch;
  ca?: string;
}

/** Each request's verdict, by image key; a registry that refuses the authorization makes each unreadable. */
export async function checkSignatures(
  requests: readonly SignatureRequest[],
  opts: FetchOptions,
): Promise<Record<string, SignatureVerdict>> {
  const out: Record<string, SignatureVerdict> = {};
  if (requests.length === 0) return out;
  const endpoint = registryEndpoint(opts.host, opts.endpoint).replace(/\/+$/, "");
  const ctx: HttpContext = {
    fetch: opts.fetch ?? fetch,
    telemetry: opts.telemetry,
    signal: opts.signal,
    requestTimeoutMs: opts.requestTimeoutMs,
    insecure: opts.insecure ?? false,
    ca: opts.ca,
  };
  const paths = requests.map((r) => repositoryPath(opts.host, r.repository));
  let authorization: string | undefined;
  try {
    const remembered = opts.token ? undefined : rememberedAnswer(opts.storedAnswer, endpoint);
    const authed = await authorize(ctx, {
      endpoint,
      paths,
      credentials: opts.credentials,
      token: opts.token,
      remembered,
    });
    authorization = authed.authorization;
  } catch (err) {
    const reason = `cannot authorize the signature look-up: ${(err as Error).message}`;
    for (const r of requests) out[r.key] = { status: "unreadable", reason };
    return out;
  }
  for (const [i, r] of requests.entries()) {
    const reader = registryReader(ctx, `${endpoint}/v2/${paths[i]}/`, authorization);
    out[r.key] = await verifySignature(reader, r.digest, r.keys);
    opts.log.debug(`${r.key}: signature of ${r.digest}: ${out[r.key]?.status}`, {
      image: r.key,
      digest: r.digest,
    });
  }
  return out;
}

/** GETs under one repository's `/v2/<path>/`, bodies kept as bytes. */
export function registryReader(ctx: HttpContext, base: string, authorization?: string): RegistryReader {
  return {
    async get(path, accept) {
      const res = await send(ctx, {
        method: "GET",
        url: new URL(path, base),
        headers: { Accept: accept },
        authorization,
        binary: true,
      });
      return { status: res.status, body: res.bytes ?? new Uint8Array() };
    },
  };
}
