// Local stand-ins for the two base images the Dockerfile pulls (nothing can be pulled here),
// tagged with the very names it asks for, so `buildah bud --pull=never` of the real Dockerfile
// exercises every stage. Each holds only what the Dockerfile uses of the real image:
// - oven/bun:<BUN_VERSION>: a shell and the few commands the RUN lines use (busybox), the Bun
//   running this test (the version package.json pins), glibc, a CA bundle;
// - debian:<DEBIAN_VERSION>-slim: glibc's loader and libraries at Debian's paths, per arch.
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { type Arch, GLIBC, LIBS, must, run } from "./rootfs.ts";

const TRIPLET: Record<Arch, string> = { amd64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu" };

function tree(name: string): { root: string; put: (from: string, to: string) => void } {
  const root = mkdtempSync(join(tmpdir(), `image-refresh-standin-${name}-`));
  const put = (from: string, to: string) => {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    copyFileSync(from, join(root, to));
  };
  return { root, put };
}

function commit(root: string, tag: string, arch: Arch, env: Record<string, string>, config: string[] = []) {
  const ctr = must(
    run(["buildah", "from", "--arch", arch, "scratch"], env),
    "start a stand-in",
  ).stdout.trim();
  must(run(["buildah", "copy", ctr, root, "/"], env), "copy a stand-in's files");
  must(
    run(["buildah", "config", "--arch", arch, "--os", "linux", ...config, ctr], env),
    "configure a stand-in",
  );
  must(run(["buildah", "commit", "--quiet", ctr, tag], env), "commit a stand-in");
  run(["buildah", "rm", ctr], env);
}

/** debian:<version>-slim for `arch`: the files the runtime stage is copied from. */
export function debianStandIn(tag: string, arch: Arch, env: Record<string, string>): string {
  const { root, put } = tree(`debian-${arch}`);
  const { dir, loader } = GLIBC[arch];
  for (const f of [basename(loader), ...LIBS]) put(join(dir, f), `/usr/lib/${TRIPLET[arch]}/${f}`);
  commit(root, tag, arch, env);
  return root;
}

/** oven/bun:<version> for the build machine (amd64). */
export function bunStandIn(tag: string, env: Record<string, string>): string {
  const { root, put } = tree("bun");
  put(process.execPath, "/usr/local/bin/bun");
  chmodSync(join(root, "usr/local/bin/bun"), 0o755);
  const busybox = Bun.which("busybox") ?? "/bin/busybox";
  put(busybox, "/bin/busybox");
  for (const applet of ["sh", "mkdir", "cp", "echo", "cat", "ls"])
    symlinkSync("busybox", join(root, "bin", applet));
  const { dir, loader } = GLIBC.amd64;
  put(join(dir, basename(loader)), loader);
  for (const lib of LIBS) put(join(dir, lib), `/usr/lib/${TRIPLET.amd64}/${lib}`);
  put("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt");
  writeFileSync(join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  mkdirSync(join(root, "root"));
  mkdirSync(join(root, "tmp"), { mode: 0o1777 });
  // This machine reaches the npm registry through a TLS proxy its system bundle trusts (the
  // bundle copied above); the real image trusts the registry with Bun's own roots.
  const trust = ["--env", "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"];
  commit(root, tag, "amd64", env, ["--env", "PATH=/usr/local/bin:/bin", "--env", "HOME=/root", ...trust]);
  return root;
}
