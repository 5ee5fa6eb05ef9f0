// What a tick writes for each registry it met, by host: its Retry-After and its API root's answer.
// Pure, like the rest of plan: every branch is a row in plan.test.ts or registry-writes.test.ts.
import type { Config } from "../../config.ts";
import { registryHostKey } from "../../registry/reference.ts";
import { REGISTRY_KEYS, type RegistryBook, registryBook, registryMigration } from "../../state/registries.ts";
import { stamp } from "../../state/values.ts";
import type { Observed, ObservedRegistry } from "../model.ts";

/**
 * `correction` is written at once, with a write of its own if need be; `rider` only with a write
 * the tick makes anyway, so that a no-op tick still writes nothing.
 */
export interface RegistryWrites {
  correction: Record<string, string | null>;
  rider: Record<string, string | null>;
}

/**
 * Per registry host. The Retry-After is stored so that the next ticks do not call that registry
 * before then (the quota belongs to the workloads' own pulls); once it was called again, a stored
 * one is removed. Its API root's answer is kept for the next tick, which then need not ask
 * (lib/registry/remembered.ts): a first answer rides with a write the tick makes anyway; a stored
 * answer that did not hold (or that the tick would not believe) is corrected at once. The keys
 * the version before kept for its one registry ride too, moved to the top-level registry's own.
 */
export function registryWrites(observed: Observed, config: Config): RegistryWrites {
  const top = registryHostKey(config.registry.host);
  const migration = registryMigration(observed.book, top);
  const hosts = Object.entries(observed.registries ?? {}).map(
    ([hostKey, seen]): RegistryHost => ({
      hostKey,
      seen,
      stored: registryBook(observed.book, hostKey, hostKey === top),
    }),
  );
  const out: RegistryWrites = { correction: {}, rider: {} };
  for (const host of hosts) {
    retryAfterWrite(host, out);
    challengeWrite(host, out);
  }
  for (const [key, value] of Object.entries(migration))
    if (!(key in out.correction) && !(key in out.rider)) out.rider[key] = value;
  return out;
}

/** One registry host as the tick met it (`seen`) and as the store holds it (`stored`). */
interface RegistryHost {
  hostKey: string;
  seen: ObservedRegistry;
  stored: RegistryBook;
}

function retryAfterWrite({ hostKey, seen, stored: book }: RegistryHost, out: RegistryWrites) {
  const key = REGISTRY_KEYS.retryAfter.name(hostKey);
  const stored = book.retryAfter;
  if (seen.retryAfter !== undefined) out.correction[key] = stamp(seen.retryAfter);
  else if (!seen.held && stored.kind !== "absent") out.correction[key] = null;
}

function challengeWrite({ hostKey, seen, stored: book }: RegistryHost, out: RegistryWrites) {
  const key = REGISTRY_KEYS.challenge.name(hostKey);
  const stored = book.challenge;
  const remember = seen.remember;
  if (remember === undefined || (stored.kind !== "absent" && stored.raw === remember)) return;
  if (stored.kind !== "absent") out.correction[key] = remember;
  else if (remember !== null) out.rider[key] = remember;
}
