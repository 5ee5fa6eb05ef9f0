// Manifests of the simulated registry: real JSON documents whose digests are the sha256 of the
// exact bytes served, and the reference registry's content negotiation (distribution
// registry/handlers/manifests.go), because that negotiation decides which digest a client sees.
import { createHash } from "node:crypto";

export const MT = {
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  ociIndex: "application/vnd.oci.image.index.v1+json",
  dockerConfig: "application/vnd.docker.container.image.v1+json",
  ociConfig: "application/vnd.oci.image.config.v1+json",
  dockerLayer: "application/vnd.docker.image.rootfs.diff.tar.gzip",
  ociLayer: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

export interface StoredManifest {
  mediaType: string;
  bytes: Buffer;
  digest: string;
  /** For an index or list: the children with their platforms. */
  children?: Array<{ digest: string; os: string; architecture: string }>;
}

const sha256 = (b: Buffer | string): string => `sha256:${createHash("sha256").update(b).digest("hex")}`;

export class ManifestStore {
  readonly #repos = new Map<
    string,
    { tags: Map<string, string>; manifests: Map<string, StoredManifest>; blobs: Map<string, Buffer> }
  >();
  #serial = 0;

  has(repository: string): boolean {
    return this.#repos.has(repository);
  }

  /** Stores a new build under `tag` and returns the digest a full-Accept HEAD yields. */
  push(repository: string, tag: string, opts: { multiArch?: boolean; oci?: boolean } = {}): string {
    const repo = this.#repo(repository);
    const build = `${repository}:${tag}#${++this.#serial}`;
    const top = opts.multiArch
      ? this.#index(repo.manifests, build, opts.oci ?? false)
      : this.#image(repo.manifests, build, "amd64", opts.oci ?? false);
    repo.tags.set(tag, top.digest);
    return top.digest;
  }

  /**
   * Stores a manifest as given (a signature's, an index of referrers), under its digest and, with
   * `tag`, that tag; returns its digest. Signatures are artifacts like any other to a registry.
   */
  putManifest(repository: string, bytes: Buffer, mediaType: string, tag?: string): string {
    const repo = this.#repo(repository);
    const manifest = { mediaType, bytes, digest: sha256(bytes) };
    repo.manifests.set(manifest.digest, manifest);
    if (tag) repo.tags.set(tag, manifest.digest);
    return manifest.digest;
  }

  /** Stores a blob (a signature's payload, a bundle); returns its digest. */
  putBlob(repository: string, bytes: Buffer): string {
    const digest = sha256(bytes);
    this.#repo(repository).blobs.set(digest, bytes);
    return digest;
  }

  blob(repository: string, digest: string): Buffer | undefined {
    return this.#repos.get(repository)?.blobs.get(digest);
  }

  /** Points `tag` at a build pushed before (its owner moved the tag back). */
  retag(repository: string, tag: string, digest: string): void {
    const repo = this.#repos.get(repository);
    if (!repo?.manifests.has(digest))
      throw new Error(`Cannot retag ${repository}:${tag}: no ${digest} was pushed`);
    repo.tags.set(tag, digest);
  }

  /** The manifest for a tag or digest as the client's Accept list allows it; see negotiate(). */
  lookup(repository: string, reference: string, accept: readonly string[]): Lookup {
    const repo = this.#repos.get(repository);
    // distribution answers an unknown repository as it answers an unknown tag in a known one.
    if (!repo) return { error: "MANIFEST_UNKNOWN", message: "manifest unknown" };
    const byTag = !reference.includes(":");
    const digest = byTag ? repo.tags.get(reference) : reference;
    const stored = digest ? repo.manifests.get(digest) : undefined;
    if (!stored) return { error: "MANIFEST_UNKNOWN", message: "manifest unknown" };
    return negotiate(stored, accept, byTag, (d) => repo.manifests.get(d));
  }

  #repo(name: string) {
    let repo = this.#repos.get(name);
    if (!repo) {
      repo = { tags: new Map(), manifests: new Map(), blobs: new Map() };
      this.#repos.set(name, repo);
    }
    return repo;
  }

  #image(store: Map<string, StoredManifest>, build: string, arch: string, oci: boolean): StoredManifest {
    const config = Buffer.from(
      JSON.stringify({ architecture: arch, os: "linux", config: { Labels: { build } } }),
    );
    const layer = `${build}/${arch}/layer`;
    const doc = {
      schemaVersion: 2,
      mediaType: oci ? MT.ociManifest : MT.dockerManifest,
      config: {
        mediaType: oci ? MT.ociConfig : MT.dockerConfig,
        size: config.length,
        digest: sha256(config),
      },
      layers: [
        { mediaType: oci ? MT.ociLayer : MT.dockerLayer, size: 1024 + layer.length, digest: sha256(layer) },
      ],
    };
    return save(store, doc.mediaType, doc);
  }

  #index(store: Map<string, StoredManifest>, build: string, oci: boolean): StoredManifest {
    const platforms = ["amd64", "arm64"];
    const children = platforms.map((architecture) => ({
      manifest: this.#image(store, build, architecture, oci),
      architecture,
    }));
    const doc = {
      schemaVersion: 2,
      mediaType: oci ? MT.ociIndex : MT.dockerList,
      manifests: children.map((c) => ({
        mediaType: c.manifest.mediaType,
        size: c.manifest.bytes.length,
        digest: c.manifest.digest,
        platform: { architecture: c.architecture, os: "linux" },
      })),
    };
    const top = save(store, doc.mediaType, doc);
    top.children = children.map((c) => ({
      digest: c.manifest.digest,
      os: "linux",
      architecture: c.architecture,
    }));
    return top;
  }
}

function save(store: Map<string, StoredManifest>, mediaType: string, doc: unknown): StoredManifest {
  const bytes = Buffer.from(JSON.stringify(doc, null, 3)); // registries serve pretty-printed JSON too
  const manifest = { mediaType, bytes, digest: sha256(bytes) };
  store.set(manifest.digest, manifest);
  return manifest;
}

export type Lookup =
  | StoredManifest
  | { error: "MANIFEST_UNKNOWN"; message: string }
  /** 400: a Docker v2 manifest asked for by tag without its media type (no schema1 rewrite). */
  | { error: "MANIFEST_INVALID"; message: string; status: 400 };

const SCHEMA1_REFUSED = { error: "MANIFEST_INVALID", message: "manifest invalid", status: 400 } as const;

/** Accept values from every header, split on commas, parameters and q-values dropped. */
export function acceptList(headers: readonly string[]): string[] {
  return headers.flatMap((h) => h.split(",")).map((v) => (v.split(";")[0] ?? "").trim().toLowerCase());
}

/**
 * The reference registry's rules: an OCI manifest or index that the client does not accept is
 * a 404; a Docker manifest list fetched by tag without the list type accepted is silently
 * replaced by its linux/amd64 child, so such a client sees the child's digest.
 */
export function negotiate(
  stored: StoredManifest,
  accept: readonly string[],
  byTag: boolean,
  get: (digest: string) => StoredManifest | undefined,
): Lookup {
  if (stored.mediaType === MT.ociManifest && !accept.includes(MT.ociManifest)) {
    return {
      error: "MANIFEST_UNKNOWN",
      message: "OCI manifest found, but accept header does not support OCI manifests",
    };
  }
  if (stored.mediaType === MT.ociIndex && !accept.includes(MT.ociIndex)) {
    return {
      error: "MANIFEST_UNKNOWN",
      message: "OCI index found, but accept header does not support OCI indexes",
    };
  }
  if (stored.mediaType === MT.dockerList && byTag && !accept.includes(MT.dockerList)) {
    const child = stored.children?.find((c) => c.os === "linux" && c.architecture === "amd64");
    const manifest = child ? get(child.digest) : undefined;
    if (!manifest)
      return {
        error: "MANIFEST_UNKNOWN",
        message: "no matching manifest for linux/amd64 in the manifest list",
      };
    return dockerByTag(manifest, accept);
  }
  return byTag ? dockerByTag(stored, accept) : stored;
}

/**
 * By tag, distribution 2.8 rewrites a Docker v2 manifest to schema1 for a client that does not
 * accept v2, and with schema1 gone that rewrite fails as 400 MANIFEST_INVALID.
 */
function dockerByTag(m: StoredManifest, accept: readonly string[]): Lookup {
  return m.mediaType === MT.dockerManifest && !accept.includes(MT.dockerManifest) ? SCHEMA1_REFUSED : m;
}
