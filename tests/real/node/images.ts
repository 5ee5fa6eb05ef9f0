// Images the kubelet pulls for real, built with buildah FROM scratch and pushed with skopeo to the
// node tier's registry: the pause image every pod's sandbox runs, the product's own image as CI
// builds it, and small test servers whose readiness is set per build.
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { assembleRootfs, buildImage, compile, containerEnv, must, run } from "../../image/rootfs.ts";

/**
 * How a test server behaves, fixed when it is built:
 *  ready          ready at once and stays so;
 *  never          serves, but its readiness endpoint never answers 200;
 *  crash N        ready, then exits 1 N seconds after it started (again after every restart);
 *  unready N      ready, then unready after N seconds without exiting;
 *  slow N         serves at once, ready only N seconds after it started (again after a restart).
 * A long N in `crash` is a build that fails only after a long delay.
 */
export type Behaviour =
  | { mode: "ready" }
  | { mode: "never" }
  | { mode: "crash" | "unready" | "slow"; after: number };

// busybox as PID 1's shell and as the HTTP server. /ready exists while the server is ready;
// the probe asks for it. TERM ends the container at once instead of after the grace period.
const SERVE = `read mode after < /behaviour
B=/bin/busybox
trap 'exit 0' TERM
$B mkdir -p /www && $B cp /build /www/index.html
$B httpd -f -p 8080 -h /www &
case "$mode" in
  ready) $B touch /www/ready ;;
  never) ;;
  crash) $B touch /www/ready; $B sleep "$after" & wait $!; echo "crashing after $after s" >&2; exit 1 ;;
  unready) $B touch /www/ready; $B sleep "$after" & wait $!; $B rm -f /www/ready ;;
  slow) $B sleep "$after" & wait $!; $B touch /www/ready ;;
esac
while :; do $B sleep 3600 & wait $!; done
`;

export interface Images {
  /** Where skopeo pushes: 127.0.0.1:<port>, forwarded into the cluster's namespace. */
  pushHost: string;
  /** buildah's storage for these builds (its own, like the image tests'). */
  storage: string;
  /** Removes that storage. */
  remove(): void;
  /** Builds and pushes a test server as `repo:tag`; returns the pushed manifest's digest. */
  server(repo: string, tag: string, b: Behaviour): Promise<string>;
  /** The pause image (the sandbox's), from the node peer's pause binary. */
  pause(binary: string, ref: string): Promise<string>;
  /** The product's image built as CI builds it, pushed as `repo:tag`. */
  product(repo: string, tag: string): Promise<string>;
  /** Deletes the layers of `repo@digest` from the registry: the manifest resolves, no pull can finish. */
  breakPulls(repo: string, digest: string): Promise<void>;
}

function scratchImage(env: Record<string, string>, files: Array<[string, string]>, entrypoint: string[]) {
  const ctr = must(run(["buildah", "from", "scratch"], env), "start a buildah container").stdout.trim();
  for (const [from, to] of files) must(run(["buildah", "copy", ctr, from, to], env), `copy ${to}`);
  must(
    run(["buildah", "config", "--entrypoint", JSON.stringify(entrypoint), "--os", "linux", ctr], env),
    "configure",
  );
  const name = `localhost/node-tier-${Math.random().toString(36).slice(2)}`;
  must(run(["buildah", "commit", "--quiet", ctr, name], env), "commit");
  run(["buildah", "rm", ctr], env);
  return name;
}

export function images(pushHost: string, work: string): Images {
  // Inside the cluster's directory: removed with it, even when the test process died.
  const c = containerEnv(work);
  const dir = mkdtempSync(join(work, "images-"));
  // Asynchronous: the registry is reached through this process's own forwarder (forward.ts),
  // which a synchronous spawn would block.
  const push = async (local: string, repo: string, tag: string) => {
    const digestFile = join(dir, "digest");
    const dest = `docker://${pushHost}/${repo}:${tag}`;
    const argv = [
      "skopeo",
      "copy",
      "--insecure-policy",
      "--dest-tls-verify=false",
      "--digestfile",
      digestFile,
    ];
    const p = Bun.spawn([...argv, `containers-storage:${local}`, dest], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...c.env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`Cannot push ${repo}:${tag}: skopeo exited ${code}\n${err}`);
    return readFileSync(digestFile, "utf8").trim();
  };
  let builds = 0;
  return {
    pushHost,
    storage: c.dir,
    remove: () => rmSync(c.dir, { recursive: true, force: true }),
    server(repo, tag, b) {
      const d = join(dir, `server-${++builds}`);
      mkdirSync(d);
      writeFileSync(join(d, "serve.sh"), SERVE);
      writeFileSync(
        join(d, "behaviour"),
        b.mode === "ready" || b.mode === "never" ? `${b.mode} 0\n` : `${b.mode} ${b.after}\n`,
      );
      // A build of its own: a new digest even for the same behaviour.
      writeFileSync(join(d, "build"), `${repo}:${tag} build ${builds} ${Date.now()} ${Math.random()}\n`);
      const busybox = join(d, "busybox");
      copyFileSync(must(run(["sh", "-c", "command -v busybox"]), "find busybox").stdout.trim(), busybox);
      chmodSync(busybox, 0o755);
      const files: Array<[string, string]> = [
        [busybox, "/bin/busybox"],
        [join(d, "serve.sh"), "/serve.sh"],
        [join(d, "behaviour"), "/behaviour"],
        [join(d, "build"), "/build"],
      ];
      return push(scratchImage(c.env, files, ["/bin/busybox", "sh", "/serve.sh"]), repo, tag);
    },
    pause(binary, ref) {
      const [repo, tag] = ref.slice(ref.indexOf("/") + 1).split(":") as [string, string];
      return push(scratchImage(c.env, [[binary, "/pause"]], ["/pause"]), repo, tag);
    },
    product(repo, tag) {
      const rootfs = assembleRootfs(compile("bun-linux-x64", join(dir, "image-refresh-linux-amd64")));
      const local = `localhost/node-tier-product-${tag}`;
      buildImage(rootfs, local, c.env);
      return push(local, repo, tag);
    },
    async breakPulls(repo, digest) {
      const base = `http://${pushHost}/v2/${repo}`;
      const accept =
        "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
      const m = (await (await fetch(`${base}/manifests/${digest}`, { headers: { accept } })).json()) as {
        layers: Array<{ digest: string }>;
      };
      for (const l of m.layers) {
        const r = await fetch(`${base}/blobs/${l.digest}`, { method: "DELETE" });
        if (r.status !== 202) throw new Error(`Cannot delete ${repo} layer ${l.digest}: ${r.status}`);
      }
    },
  };
}
