// The tick's signature look-ups over the registry's own HTTP layer (spans, timeouts, redirects
// without credentials to another origin): one authorization per registry for every repository
// asked (the remembered API root answer, else its probe; one token request with each
// repository's pull scope), then the verifier's GETs. Only images whose new build is due get
// here, so a no-op tick sends none of these requests.
import type { RegistryConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import { authorize } from "../registry/auth.ts";
import type { BasicCredentials } from "../registry/credentials.ts";
import { type HttpContext, send } from "../registry/http.ts";
import { registryEndpoint, registryHostKey, repositoryPath } from "../registry/reference.ts";
import { rememberedAnswer } from "../registry/remembered.ts";
import type { ResolveOptions } from "../registry/results.ts";
import { basicSecrets } from "../scrub.ts";
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
  /** `auth: aws`: the registry's credentials got from the cloud's identity, as the tag look-up gets them. */
  identity?: ResolveOptions["identity"];
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
    secrets: opts.credentials ? basicSecrets(opts.credentials.username, opts.credentials.password) : [],
  };
  const paths = requests.map((r) => repositoryPath(opts.host, r.repository));
  let authorization: string | undefined;
  try {
    const remembered = opts.token ? undefined : rememberedAnswer(opts.storedAnswer, endpoint);
    const credentials = opts.identity ? await loginWith(ctx, opts.identity) : opts.credentials;
    const authed = await authorize(ctx, {
      endpoint,
      paths,
      credentials,
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

/** The cloud identity's registry credentials, their secrets added to what is scrubbed. */
async function loginWith(
  ctx: HttpContext,
  identity: NonNullable<ResolveOptions["identity"]>,
): Promise<BasicCredentials> {
  const login = await identity(ctx);
  const basic = basicSecrets(login.credentials.username, login.credentials.password);
  ctx.secrets = [...(ctx.secrets ?? []), ...basic, ...login.secrets];
  return login.credentials;
}

/** A build to check on its image's own registry. */
export interface RegistryRequest extends SignatureRequest {
  registry: RegistryConfig;
}

/**
 * Every build checked on its image's own registry: the builds grouped by registry host, each
 * group with that registry's options (credentials, identity, endpoint) and its own stored API
 * root answer, the hosts at once. One registry's refusal is only its own images'.
 */
export async function checkEachRegistry(
  requests: readonly RegistryRequest[],
  optionsFor: (registry: RegistryConfig, hostKey: string) => FetchOptions,
  storedAnswers: Readonly<Record<string, string>> = {},
): Promise<Record<string, SignatureVerdict>> {
  const groups = new Map<string, RegistryRequest[]>();
  for (const r of requests) {
    const hostKey = registryHostKey(r.registry.host);
    groups.set(hostKey, [...(groups.get(hostKey) ?? []), r]);
  }
  const answers = await Promise.all(
    [...groups].map(([hostKey, group]) =>
      checkSignatures(group, {
        ...optionsFor((group[0] as RegistryRequest).registry, hostKey),
        storedAnswer: storedAnswers[hostKey],
      }),
    ),
  );
  return Object.assign({}, ...answers);
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
