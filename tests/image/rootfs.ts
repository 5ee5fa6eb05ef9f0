// The image's final stage, assembled on this machine from the same Debian release (bookworm) the
// Dockerfile takes it from: the glibc build of the binary, glibc's loader and the libraries the
// binary lists as NEEDED, a CA bundle and the non-root user; plus buildah/podman helpers.
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

export const ROOT = join(import.meta.dir, "..", "..");
export { BUILD_FLAGS } from "../../scripts/release.ts";

import { BUILD_FLAGS } from "../../scripts/release.ts";

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string[], env: Record<string, string | undefined> = {}, timeoutMs = 120_000): Run {
  const r = Bun.spawnSync(cmd, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    timeout: timeoutMs,
  });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

export function must(r: Run, what: string): Run {
  if (r.code !== 0) throw new Error(`Cannot ${what}: exit ${r.code}\n${r.stderr}`);
  return r;
}

/** Compiles refresh.ts for `target` with the flags of `npm run build`. */
export function compile(target: string, outfile: string): string {
  // Full environment: a cross-compile fetches Bun's runtime for the target from the npm registry.
  const args = [...BUILD_FLAGS, `--target=${target}`, "--outfile", outfile];
  must(run([process.execPath, "build", join(ROOT, "refresh.ts"), ...args], process.env), `compile ${target}`);
  return outfile;
}

const PASSWD = "nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n";
const GROUP = "nonroot:x:65532:\n";

export type Arch = "amd64" | "arm64";
/** Where this Debian machine keeps each architecture's glibc (arm64: package libc6-arm64-cross). */
export const GLIBC: Record<Arch, { dir: string; loader: string; bunTarget: string }> = {
  amd64: {
    dir: "/usr/lib/x86_64-linux-gnu",
    loader: "/lib64/ld-linux-x86-64.so.2",
    bunTarget: "bun-linux-x64",
  },
  arm64: {
    dir: "/usr/aarch64-linux-gnu/lib",
    loader: "/lib/ld-linux-aarch64.so.1",
    bunTarget: "bun-linux-arm64",
  },
};
/** What `readelf -d` lists as NEEDED for the glibc build, besides the loader. */
export const LIBS = ["libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2"];

/** The final stage's files for `arch`, in a new directory: the Dockerfile's layout. */
export function assembleRootfs(binary: string, arch: Arch = "amd64"): string {
  const root = mkdtempSync(join(tmpdir(), `image-refresh-rootfs-${arch}-`));
  const put = (from: string, to: string) => {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    copyFileSync(from, join(root, to));
  };
  const { dir, loader } = GLIBC[arch];
  put(binary, "/usr/local/bin/image-refresh");
  put(join(dir, basename(loader)), loader);
  for (const lib of LIBS) put(join(dir, lib), `/lib/${lib}`);
  put("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt");
  writeFileSync(join(root, "etc/passwd"), PASSWD);
  writeFileSync(join(root, "etc/group"), GROUP);
  return root;
}

/**
 * buildah and podman with storage, runtime and limits of their own: runc (crun cannot start
 * containers on these machines), the machine's real file limit, and a private storage root so
 * that parallel runs never share state.
 */
export function containerEnv(parent = tmpdir()): { env: Record<string, string>; dir: string } {
  const dir = mkdtempSync(join(parent, "image-refresh-containers-"));
  mkdirSync(join(dir, "tmp"));
  // Short names (FROM oven/bun) mean docker.io, as for Docker; --pull=never keeps it local.
  writeFileSync(
    join(dir, "registries.conf"),
    'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n',
  );
  const hard = must(run(["sh", "-c", "ulimit -Hn"]), "read the file limit").stdout.trim();
  writeFileSync(
    join(dir, "containers.conf"),
    [
      "[containers]",
      `default_ulimits = ["nofile=${hard}:${hard}", "nproc=32768:32768"]`,
      "[engine]",
      'runtime = "runc"',
      `tmp_dir = "${dir}/tmp"`,
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "storage.conf"),
    ["[storage]", 'driver = "vfs"', `graphroot = "${dir}/root"`, `runroot = "${dir}/run"`, ""].join("\n"),
  );
  return {
    dir,
    env: {
      CONTAINERS_CONF: join(dir, "containers.conf"),
      CONTAINERS_STORAGE_CONF: join(dir, "storage.conf"),
      CONTAINERS_REGISTRIES_CONF: join(dir, "registries.conf"),
      TMPDIR: join(dir, "tmp"),
    },
  };
}

/** FROM scratch, the rootfs, and the final stage's USER, ENTRYPOINT and CMD. */
export function buildImage(
  rootfs: string,
  tag: string,
  env: Record<string, string>,
  arch: Arch = "amd64",
): void {
  const ctr = must(
    run(["buildah", "from", "--arch", arch, "scratch"], env),
    "start a buildah container",
  ).stdout.trim();
  must(run(["buildah", "copy", ctr, rootfs, "/"], env), "copy the rootfs");
  must(
    run(
      [
        "buildah",
        "config",
        "--user",
        "65532:65532",
        "--entrypoint",
        '["/usr/local/bin/image-refresh"]',
        "--cmd",
        "tick",
        "--arch",
        arch,
        "--os",
        "linux",
        ctr,
      ],
      env,
    ),
    "configure the image",
  );
  must(run(["buildah", "commit", "--quiet", ctr, tag], env), "commit the image");
  run(["buildah", "rm", ctr], env);
}

/** As the CronJob runs it: read-only root, user 65532, no capabilities; host loopback for the sims. */
export function podmanArgv(tag: string, args: string[], extra: string[] = []): string[] {
  const hardened = ["--read-only", "--user", "65532", "--cap-drop=all", "--network", "host"];
  return ["podman", "run", "--rm", ...hardened, ...extra, tag, ...args];
}

export function podmanRun(
  tag: string,
  args: string[],
  env: Record<string, string>,
  extra: string[] = [],
): Run {
  return run(podmanArgv(tag, args, extra), env);
}
