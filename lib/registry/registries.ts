// Every registry a tick asks, each on its own. Images are grouped by their registry's host; each
// host is resolved with its own credentials, its own stored Retry-After and remembered answer,
// and its own budget (the first HEAD alone, one token request with its repositories' scopes, a
// 429 that stops only its own requests), all hosts at once. One registry's quota or outage is
// never another's: each group's results and failures stay its own.
import type { ImageConfig, RegistryConfig } from "../config.ts";
import { resolveLookups } from "./client.ts";
import { registryHostKey } from "./reference.ts";
import { type DigestResult, type DigestResults, lookupId, type ResolveOptions } from "./results.ts";
import type { RetryAfter } from "./retry-after.ts";

/** The images of one registry host, with that registry's settings (one per host: config.ts). */
export interface RegistryGroup {
  /** registryHostKey: lower case, Docker Hub's names as docker.io. */
  hostKey: string;
  registry: RegistryConfig;
  images: ImageConfig[];
}

/** What an earlier tick left for one host: its Retry-After, its API root's answer. */
export interface HostMemory {
  notBefore?: Date;
  storedAnswer?: string;
}

/** What one host's resolution leaves for the store. */
export interface HostOutcome {
  /** A 429's readable Retry-After: store it, and call the host nothing before it. */
  retryAfter?: RetryAfter;
  /** The API root's answer to keep (null: remove the stored one); undefined: nothing learned. */
  remember?: string | null;
}

export interface Resolution {
  /** By image key, for every image asked. */
  digests: Map<string, DigestResult>;
  /** By host key, for every host asked. */
  hosts: Map<string, HostOutcome>;
}

/** The images by registry host, in the order each host first appears. */
export function registryGroups(images: readonly ImageConfig[]): RegistryGroup[] {
  const groups = new Map<string, RegistryGroup>();
  for (const img of images) {
    const hostKey = registryHostKey(img.registry.host);
    const group = groups.get(hostKey) ?? { hostKey, registry: img.registry, images: [] };
    group.images.push(img);
    groups.set(hostKey, group);
  }
  return [...groups.values()];
}

/** Per group, what its requests are sent with (credentials, timeouts, the tick's signal, ...). */
export type OptionsFor = (group: RegistryGroup, memory: HostMemory) => ResolveOptions;

/**
 * Resolves every image against its own registry, the hosts concurrently. `memory` is by host key.
 * A host whose resolution throws (a bug, not a registry's answer: those are per image) fails the
 * whole call, as one registry's did before.
 */
export async function resolveRegistries(
  images: readonly ImageConfig[],
  memory: Readonly<Record<string, HostMemory>>,
  optionsFor: OptionsFor,
): Promise<Resolution> {
  const digests = new Map<string, DigestResult>();
  const hosts = new Map<string, HostOutcome>();
  const groups = registryGroups(images);
  const answers = await Promise.all(
    groups.map((g) =>
      resolveLookups(
        g.images.map((i) => ({ repository: i.repository, tag: i.tag })),
        optionsFor(g, memory[g.hostKey] ?? {}),
      ),
    ),
  );
  groups.forEach((g, n) => {
    const results = answers[n] as DigestResults;
    for (const img of g.images) {
      const r = results.get(lookupId(img));
      if (r) digests.set(img.key, r);
    }
    hosts.set(g.hostKey, {
      ...(results.retryAfter ? { retryAfter: results.retryAfter } : {}),
      ...(results.remember !== undefined ? { remember: results.remember } : {}),
    });
  });
  return { digests, hosts };
}

/** No image asked: nothing resolved, no host met. */
export const nothingResolved = (): Resolution => ({ digests: new Map(), hosts: new Map() });
