// The registry's answer to its API root (`GET /v2/`), remembered in the store from one tick to
// the next so that a tick need not ask again: `<endpoint> open` when the root answered 200, or
// `<endpoint> <its WWW-Authenticate challenge>` when it answered 401. The answer names where the
// pull secret is sent (a Bearer realm), and anyone who may write the store's ConfigMap could
// write one, so a remembered answer is believed only for the registry it was learned from and
// only when its realm is on that registry's own origin (Docker Hub's token service excepted,
// which is on auth.docker.io by design). Anything else is asked again, as if nothing were stored.
import { parseWwwAuthenticate } from "./challenge.ts";

export const OPEN = "open";

/** Longer than any registry's challenge; a longer stored value is not believed. */
const MAX_LENGTH = 2048;

/** Realms on another origin than the registry's that are known to be the registry's own. */
const KNOWN_REALMS: Record<string, string> = {
  "https://registry-1.docker.io": "https://auth.docker.io",
};

/**
 * The answer to replay for this endpoint (`open`, or a challenge to answer as the probe's), or
 * undefined when nothing usable is stored.
 */
export function rememberedAnswer(stored: string | undefined, endpoint: string): string | undefined {
  if (stored === undefined || stored.length > MAX_LENGTH || !stored.startsWith(`${endpoint} `))
    return undefined;
  const answer = stored.slice(endpoint.length + 1);
  return trusted(answer, endpoint) ? answer : undefined;
}

/** What to store for the API root's answer this tick: null when it must not be remembered. */
export function toRemember(answer: string, endpoint: string): string | null {
  const value = `${endpoint} ${answer}`;
  return value.length <= MAX_LENGTH && trusted(answer, endpoint) ? value : null;
}

/** `open`, Basic, or Bearer whose realm is on the endpoint's origin (or a known one of it). */
function trusted(answer: string, endpoint: string): boolean {
  if (answer === OPEN) return true;
  if (/[\r\n]/.test(answer)) return false;
  const challenges = parseWwwAuthenticate(answer);
  const bearer = challenges.find((c) => c.scheme === "bearer");
  if (!bearer) return challenges.some((c) => c.scheme === "basic");
  let origin: string;
  try {
    origin = new URL(endpoint).origin;
  } catch {
    return false;
  }
  const realm = bearer.params.realm;
  if (!realm || !URL.canParse(realm)) return false;
  const realmOrigin = new URL(realm).origin;
  return realmOrigin === origin || KNOWN_REALMS[origin] === realmOrigin;
}
