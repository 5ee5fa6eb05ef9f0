// Container image references as the container runtime reads them (distribution/reference's
// normalize.go and regexp.go): the first path component is a registry host when it contains "."
// or ":", is "localhost" or has an upper-case letter; otherwise the image is on Docker Hub, whose one-component names live
// under "library/". docker.io and index.docker.io name the same registry. Pure; table-tested.

export interface ImageRef {
  /** Lowercase registry host with its port, Docker Hub always as "docker.io". */
  host: string;
  /** Repository path on that registry, with "library/" for Docker Hub's one-component names. */
  path: string;
  tag?: string;
  digest?: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$/;
// distribution/reference normalises these two only (defaultDomain, legacyDefaultDomain): a
// runtime pulls `registry-1.docker.io/x` from that host by that name, not as docker.io/x.
const HUB = new Set(["docker.io", "index.docker.io"]);

/** The reference parsed, or undefined when it is not one a runtime would pull. */
export function parseImageRef(ref: string): ImageRef | undefined {
  const at = ref.indexOf("@");
  const digest = at >= 0 ? ref.slice(at + 1) : undefined;
  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  const named = at >= 0 ? ref.slice(0, at) : ref;
  const slash = named.indexOf("/");
  const first = slash >= 0 ? named.slice(0, slash) : "";
  const isHost =
    slash >= 0 &&
    (first.includes(".") || first.includes(":") || first === "localhost" || first !== first.toLowerCase());
  if (isHost && !HOST.test(first)) return undefined;
  let host = isHost ? first.toLowerCase() : "docker.io";
  if (HUB.has(host)) host = "docker.io";
  let rest = isHost ? named.slice(slash + 1) : named;
  const colon = rest.lastIndexOf(":");
  const tag = colon >= 0 ? rest.slice(colon + 1) : undefined;
  if (tag !== undefined && !TAG.test(tag)) return undefined;
  if (colon >= 0) rest = rest.slice(0, colon);
  const parts = rest.split("/");
  if (rest === "" || !parts.every((p) => COMPONENT.test(p))) return undefined;
  const path = host === "docker.io" && parts.length === 1 ? `library/${rest}` : rest;
  return { host, path, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

/** The configured image (registry.host and repository) in the same normal form. */
export function configuredRef(host: string, repository: string): ImageRef | undefined {
  return parseImageRef(`${host}/${repository}`);
}

/** Whether two references name the same repository on the same registry. */
export function sameRepository(a: ImageRef, b: ImageRef): boolean {
  return a.host === b.host && a.path === b.path;
}
