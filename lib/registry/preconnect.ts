// The registry's connection opened while the API reads travel. Nearly every tick asks the
// registry something once the store has answered (which says whether it may be asked at all), and
// on the tick's critical path those requests would otherwise each begin with a TCP connection
// and a TLS handshake. Bun's fetch.preconnect opens one now and leaves it in the pool: the first
// registry request takes it when its handshake is done by then; when it is not (a registry far
// away), Bun opens another for that request and this one serves the next, sent beside another,
// which would otherwise wait for a handshake of its own (docs/benchmarks.md, section 7). It sends
// no HTTP request, so a registry held by a stored Retry-After sees at most this one handshake and
// still no request.
import type { Config } from "../config.ts";
import { registryTls } from "./http.ts";
import { registryEndpoint } from "./reference.ts";
import { registryGroups } from "./registries.ts";

type Env = Record<string, string | undefined>;
type Preconnect = (url: string) => void;

/** Bun sends these through a proxy; a connection opened directly would not be the one used. */
const PROXY_VARIABLES = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/**
 * The origins worth opening before the store has answered: each registry's and, when the
 * configuration names one, its token endpoint's. None when no image is resolved, when a request
 * would carry TLS options of its own (an extra trust anchor, NODE_TLS_REJECT_UNAUTHORIZED: Bun then
 * builds a TLS context for the request, and a connection opened with the default one is not
 * reused), or when a proxy is configured.
 */
export function originsToPreconnect(config: Config, env: Env, ca?: string): string[] {
  if (config.images.every((i) => i.pinned)) return [];
  if (registryTls(ca, env) !== undefined) return [];
  if (PROXY_VARIABLES.some((name) => env[name])) return [];
  const origins = new Set<string>();
  // Every registry an image is resolved against: each is asked once the store has answered.
  for (const { registry } of registryGroups(config.images.filter((i) => !i.pinned)))
    for (const raw of [registryEndpoint(registry.host, registry.endpoint), registry.token?.realm]) {
      if (raw === undefined) continue;
      const url = URL.parse(raw);
      // Bun 1.4's fetch.preconnect throws "Invalid port" for a scheme's default port (its URL parser
      // drops :443 and :80, then finds no port: oven-sh/bun#19626, fix proposed in #43034), so only
      // an explicit other port (a mirror on :5000) is opened early until that lands.
      if (!url?.port) continue;
      if (url.protocol === "https:" || (url.protocol === "http:" && registry.insecure))
        origins.add(url.origin);
    }
  return [...origins];
}

/** Opens the connections (a fetch without Bun's preconnect, as in a test, opens none). */
export function preconnectRegistry(config: Config, env: Env, ca?: string, f: typeof fetch = fetch): string[] {
  const preconnect = (f as unknown as { preconnect?: Preconnect }).preconnect;
  if (typeof preconnect !== "function") return [];
  const opened: string[] = [];
  for (const origin of originsToPreconnect(config, env, ca)) {
    try {
      preconnect.call(f, origin);
      opened.push(origin);
    } catch {
      // An early connection is only a head start: the request opens its own.
    }
  }
  return opened;
}
