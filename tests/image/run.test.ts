// The image, for real: its final stage's root filesystem built FROM scratch with buildah and run
// with podman as the CronJob runs it (read-only root, user 65532, every capability dropped):
// version, --help, demo, and one real tick against the simulated cluster and registry over the
// host's loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { needTools } from "../support/tools.ts";
import { startWorld, type World, writes } from "../support/world.ts";
import {
  assembleRootfs,
  buildImage,
  compile,
  containerEnv,
  podmanArgv,
  podmanRun,
  ROOT,
  run,
} from "./rootfs.ts";

const TAG = "localhost/image-refresh:test";
const gate = needTools([
  { tool: "buildah", apt: "buildah" },
  { tool: "podman", apt: "podman" },
  { tool: "runc", apt: "runc" },
]);

describe.skipIf(gate)("the image built with buildah, run with podman", () => {
  let ctr: { env: Record<string, string>; dir: string };
  let rootfs: string;
  beforeAll(() => {
    ctr = containerEnv();
    rootfs = assembleRootfs(compile("bun-linux-x64", join(ROOT, "dist", "image-refresh-linux-amd64")));
    buildImage(rootfs, TAG, ctr.env);
  }, 300_000);
  afterAll(() => {
    rmSync(ctr.dir, { recursive: true, force: true });
    rmSync(rootfs, { recursive: true, force: true });
  });

  test("the image runs the binary as the non-root user, with only the final stage's directories", () => {
    const r = run(["podman", "image", "inspect", "--format", "{{json .Config}}", TAG], ctr.env);
    const config = JSON.parse(r.stdout);
    expect(config).toMatchObject({
      User: "65532:65532",
      Entrypoint: ["/usr/local/bin/image-refresh"],
      Cmd: ["tick"],
    });
    expect(readdirSync(rootfs).sort()).toEqual(["etc", "lib", "lib64", "usr"]);
  });

  test("version", () => {
    expect(podmanRun(TAG, ["version"], ctr.env)).toEqual({
      code: 0,
      stdout: `image-refresh ${pkg.version}\n`,
      stderr: "",
    });
  });

  test("--help lists every command", () => {
    const r = podmanRun(TAG, ["--help"], ctr.env);
    expect(r.code).toBe(0);
    for (const c of ["[tick]", "status", "rearm", "demo", "version"])
      expect(r.stdout).toContain(`image-refresh ${c}`);
  });

  test("demo runs its scripted scenario to the end", () => {
    const r = podmanRun(TAG, ["demo"], ctr.env);
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.stdout).toContain("demo finished: every tick did what it should");
  }, 120_000);

  test("no shell in the image: the root filesystem is what the Dockerfile copies", () => {
    const r = podmanRun(TAG, [], ctr.env, ["--entrypoint", "/bin/sh"]);
    expect(r.code).not.toBe(0);
  });

  describe("one tick against the simulated cluster and registry", () => {
    let w: World;
    beforeAll(async () => {
      w = await startWorld();
      // The container's user 65532 reads the mounted files; the world's directory is the test's own.
      chmodSync(w.dir, 0o755);
      for (const f of [w.configPath, w.kubeconfigPath, w.caPath]) chmodSync(f, 0o644);
    });
    afterAll(async () => {
      await w.stop();
    });

    /** Runs the image against the simulators; Bun.spawnSync would block them, so asynchronously. */
    async function tickInImage(args: string[], mount: string[]): Promise<{ code: number; stderr: string }> {
      const proc = Bun.spawn(podmanArgv(TAG, args, mount), {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...ctr.env },
        stdout: "pipe",
        stderr: "pipe",
      });
      const timer = setTimeout(() => proc.kill("SIGKILL"), 120_000);
      const [stderr, code] = [await new Response(proc.stderr).text(), await proc.exited];
      clearTimeout(timer);
      return { code, stderr };
    }

    test("records the digests, as a tick on the host does", async () => {
      const mount = [
        "--volume",
        `${w.dir}:/etc/image-refresh:ro`,
        "--env",
        "NODE_EXTRA_CA_CERTS=/etc/image-refresh/ca.pem",
      ];
      const inImage = (p: string) => join("/etc/image-refresh", p.slice(w.dir.length + 1));
      const args = ["tick", "--config", inImage(w.configPath), "--kubeconfig", inImage(w.kubeconfigPath)];
      const { code, stderr } = await tickInImage(args, mount);
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      expect(writes(w.api).length).toBeGreaterThan(0);
      expect(Object.keys(w.ours()).some((k) => k.endsWith("-digest"))).toBe(true);
      expect(w.registry.log.length).toBeGreaterThan(0);
    }, 120_000);

    test("in-cluster, as the CronJob runs it: no arguments, the service account's files, the default config path", async () => {
      // What the kubelet mounts for the pod's service account, and the ConfigMap at the default path.
      const sa = mkdtempSync(join(tmpdir(), "image-refresh-sa-"));
      const etc = mkdtempSync(join(tmpdir(), "image-refresh-etc-"));
      try {
        writeFileSync(join(sa, "token"), `${w.api.token}\n`);
        writeFileSync(join(sa, "ca.crt"), readFileSync(w.caPath));
        writeFileSync(join(sa, "namespace"), "apps\n");
        copyFileSync(w.configPath, join(etc, "config.yaml"));
        copyFileSync(w.caPath, join(etc, "ca.pem"));
        for (const d of [sa, etc]) {
          chmodSync(d, 0o755);
          for (const f of readdirSync(d)) chmodSync(join(d, f), 0o644);
        }
        const url = new URL(w.api.url);
        const mount = [
          "--volume",
          `${sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
          "--volume",
          `${etc}:/etc/image-refresh:ro`,
          "--env",
          `KUBERNETES_SERVICE_HOST=${url.hostname}`,
          "--env",
          `KUBERNETES_SERVICE_PORT=${url.port}`,
          // The registry's CA; a real registry's is in the image's bundle.
          "--env",
          "NODE_EXTRA_CA_CERTS=/etc/image-refresh/ca.pem",
        ];
        w.api.clearLog();
        const { code, stderr } = await tickInImage([], mount);
        // The previous test recorded the digests: this tick adopts the floating tag, or is a no-op.
        expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
        expect(stderr).toMatch(/ outcome=(noop|refreshed) /);
        // Every request carried the service account's token, read from the mounted file.
        expect(w.api.log.length).toBeGreaterThan(0);
        expect(w.api.log.every((e) => e.status !== 401)).toBe(true);
      } finally {
        rmSync(sa, { recursive: true, force: true });
        rmSync(etc, { recursive: true, force: true });
      }
    }, 120_000);
  });
});
