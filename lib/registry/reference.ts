// Names as the configuration writes them, and the wire forms a registry needs. The pinned
// reference keeps the configured host and repository as written, so a workload
// pinned by an earlier shell implementation compares equal; only the request path is normalised.

/** distribution-spec name grammar, one or more path components. */
const NAME_RE = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
/** distribution-spec tag grammar. */
export const TAG_RE = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
/** Stricter than distribution/reference on purpose: only a full, lowercase sha256 is recorded. */
export const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;

/** The names under which Docker Hub is known; all of them are served by registry-1.docker.io. */
const HUB_ALIASES = new Set(["docker.io", "index.docker.io", "registry-1.docker.io"]);

export function isDockerHub(host: string): boolean {
  return HUB_ALIASES.has(host.toLowerCase());
}

/**
 * The name a registry's rules are kept under (its quota, its Retry-After, its remembered
 * challenge): the host in lower case, Docker Hub's names as one.
 */
export function registryHostKey(host: string): string {
  return isDockerHub(host) ? "docker.io" : host.toLowerCase();
}

/** Base URL of the registry API; an explicit endpoint wins, Docker Hub's names map to its API host. */
export function registryEndpoint(host: string, endpoint?: string): string {
  if (endpoint) return endpoint.replace(/\/+$/, "");
  if (isDockerHub(host)) return "https://registry-1.docker.io";
  return `https://${host.toLowerCase()}`;
}

/** `reg.example.com/myorg/api` under host `reg.example.com`: the host written twice. */
export function repeatsHost(host: string, repository: string): boolean {
  const first = repository.split("/")[0] as string;
  return first === host.toLowerCase() || (isDockerHub(host) && isDockerHub(first));
}

/**
 * The repository path used on the wire. Docker Hub puts official images under `library/`;
 * forgetting it yields a 401 insufficient_scope rather than a helpful 404.
 */
export function repositoryPath(host: string, repository: string): string {
  if (!NAME_RE.test(repository)) {
    throw new Error(
      `Cannot use repository "${repository}": it does not match the OCI name grammar (lowercase components separated by "/")`,
    );
  }
  if (repeatsHost(host, repository)) {
    throw new Error(
      `Cannot use repository "${repository}": it repeats the registry host; write the host in registry.host only`,
    );
  }
  if (isDockerHub(host) && !repository.includes("/")) return `library/${repository}`;
  return repository;
}

/** `<host>/<repository>@<digest>` with host and repository exactly as configured. */
export function pinnedReference(host: string, repository: string, digest: string): string {
  if (!DIGEST_RE.test(digest)) {
    throw new Error(`Cannot pin ${host}/${repository}: digest "${digest}" is not sha256:<64 lowercase hex>`);
  }
  return `${host}/${repository}@${digest}`;
}

/** The four manifest types, indexes first, so a multi-arch tag yields its index digest. */
export const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");
