// The image's final stage, assembled on this machine: the musl build of the binary, the loader
// and libraries it needs, a CA bundle and the non-root user. Debian has musl's loader but no
// musl-linked libstdc++, so Debian's glibc-linked libstdc++ and libgcc_s stand in for Alpine's,
// with scripts/musl-glibc-shim.c as the ld-linux-x86-64.so.2 they list as NEEDED. Everything else
// (paths, user, entrypoint) is what the Dockerfile's final stage holds.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pkg from "../package.json" with { type: "json" };

export const ROOT = join(import.meta.dir, "..");
/** The flags of `npm run build` (--compile, --bytecode, ...), without its --outfile. */
export const BUILD_FLAGS = pkg.scripts.build
  .split(/\s+/)
  .filter((w, i, all) => w.startsWith("--") && w !== "--outfile" && all[i - 1] !== "--outfile");

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

function must(r: Run, what: string): Run {
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

/**
 * Tools from Debian this suite needs, as "name (apt package)". tests/tools.ts (issue 14) is not
 * on this branch; same rule: outside CI a missing tool skips the suite with one printed line,
 * with CI set it fails.
 */
export function toolGate(
  suite: string,
  tools: Array<[string, string]>,
): { skip: boolean; missing: string[] } {
  const missing = tools
    .filter(([name]) => !Bun.which(name) && !existsSync(name))
    .map(([n, apt]) => `${n} (apt ${apt})`);
  if (missing.length > 0 && !process.env.CI) console.log(`skip ${suite}: needs ${missing.join(", ")}`);
  return { skip: missing.length > 0, missing };
}

/** The final stage's files, in a new directory. */
export function assembleRootfs(muslBinary: string): string {
  const root = mkdtempSync(join(tmpdir(), "image-refresh-rootfs-"));
  const put = (from: string, to: string) => {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    copyFileSync(from, join(root, to));
  };
  put(muslBinary, "/usr/local/bin/image-refresh");
  put("/lib/ld-musl-x86_64.so.1", "/lib/ld-musl-x86_64.so.1");
  for (const lib of ["libstdc++.so.6", "libgcc_s.so.1"]) {
    const from = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"]
      .map((d) => join(d, lib))
      .find(existsSync);
    if (!from) throw new Error(`Cannot find Debian's ${lib} (package libstdc++6 / libgcc-s1)`);
    put(from, `/usr/lib/${lib}`);
  }
  const shim = join(root, "usr/lib/ld-linux-x86-64.so.2");
  must(
    run(["musl-gcc", "-shared", "-fPIC", "-O2", "-o", shim, join(ROOT, "scripts", "musl-glibc-shim.c")]),
    "build the musl shim",
  );
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
export function containerEnv(): { env: Record<string, string>; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-containers-"));
  mkdirSync(join(dir, "tmp"));
  writeFileSync(join(dir, "registries.conf"), "unqualified-search-registries = []\n");
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
      // Registries config of our own: nothing is ever pulled, short names never resolve remotely.
      CONTAINERS_REGISTRIES_CONF: join(dir, "registries.conf"),
      TMPDIR: join(dir, "tmp"),
    },
  };
}

/** FROM scratch, the rootfs, and the final stage's USER, ENTRYPOINT and CMD. */
export function buildImage(rootfs: string, tag: string, env: Record<string, string>): void {
  const ctr = must(run(["buildah", "from", "scratch"], env), "start a buildah container").stdout.trim();
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
