// Images for the real registry, built here as skopeo `dir:` layouts (no pulls from anywhere):
// one tiny layer and config per platform, and the manifest or list in the media type asked for.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type Kind = "oci" | "oci-index" | "docker" | "docker-list";

const MT = {
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociConfig: "application/vnd.oci.image.config.v1+json",
  ociLayer: "application/vnd.oci.image.layer.v1.tar+gzip",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerConfig: "application/vnd.docker.container.image.v1+json",
  dockerLayer: "application/vnd.docker.image.rootfs.diff.tar.gzip",
} as const;

const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** A one-file tar, gzipped: enough for the registry, which never unpacks layers. */
function layer(content: string): { gz: Uint8Array; diffId: string } {
  const body = Buffer.from(content);
  const header = Buffer.alloc(512);
  header.write("marker.txt", 0);
  header.write("0000644\0", 100);
  header.write("0000000\0", 108);
  header.write("0000000\0", 116);
  header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124);
  header.write("00000000000\0", 136);
  header.write("        ", 148);
  header.write("0", 156);
  header.write("ustar\0" + "00", 257);
  let sum = 0;
  for (const b of header) sum += b;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  const tar = Buffer.concat([header, body, pad, Buffer.alloc(1024)]);
  return { gz: Bun.gzipSync(tar), diffId: `sha256:${sha(tar)}` };
}

interface Written {
  mediaType: string;
  digest: string;
  size: number;
}

class DirLayout {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "version"), "Directory Transport Version: 1.1\n");
  }
  blob(bytes: Uint8Array | string, mediaType: string): Written {
    const hex = sha(bytes);
    writeFileSync(join(this.dir, hex), bytes);
    return { mediaType, digest: `sha256:${hex}`, size: Buffer.byteLength(bytes) };
  }
  /** The image's own manifest (top) or one instance of a list (by its digest). */
  manifest(json: unknown, mediaType: string, top: boolean): Written {
    const text = JSON.stringify(json);
    const hex = sha(text);
    writeFileSync(join(this.dir, top ? "manifest.json" : `${hex}.manifest.json`), text);
    return { mediaType, digest: `sha256:${hex}`, size: Buffer.byteLength(text) };
  }
}

function image(d: DirLayout, docker: boolean, arch: string, marker: string, top: boolean): Written {
  const l = layer(`${marker} ${arch}\n`);
  const config = JSON.stringify({
    architecture: arch,
    os: "linux",
    config: { Labels: { marker } },
    rootfs: { type: "layers", diff_ids: [l.diffId] },
  });
  const c = d.blob(config, docker ? MT.dockerConfig : MT.ociConfig);
  const g = d.blob(l.gz, docker ? MT.dockerLayer : MT.ociLayer);
  const mediaType = docker ? MT.dockerManifest : MT.ociManifest;
  return d.manifest({ schemaVersion: 2, mediaType, config: c, layers: [g] }, mediaType, top);
}

/** Writes a `dir:` layout of `kind`; `marker` makes each build's digests new. */
export function buildImage(
  kind: Kind,
  marker: string,
  root = mkdtempSync(join(tmpdir(), "ir-img-")),
): string {
  const d = new DirLayout(join(root, `${kind}-${sha(marker).slice(0, 8)}`));
  const docker = kind === "docker" || kind === "docker-list";
  if (kind === "oci" || kind === "docker") {
    image(d, docker, "amd64", marker, true);
    return d.dir;
  }
  const manifests = ["amd64", "arm64"].map((arch) => ({
    ...image(d, docker, arch, marker, false),
    platform: { architecture: arch, os: "linux" },
  }));
  const mediaType = docker ? MT.dockerList : MT.ociIndex;
  d.manifest({ schemaVersion: 2, mediaType, manifests }, mediaType, true);
  return d.dir;
}
