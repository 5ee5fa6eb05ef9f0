// The Dockerfile itself, built by the release build (`scripts/release.ts --image`: one
// `buildah bud --platform linux/amd64,linux/arm64 --manifest`) against local stand-ins of its
// two bases (tests/image/standins.ts); the amd64 image of the index is run with podman, the
// arm64 image's files under qemu-user-static. A broken stage, a wrong path or a missing
// library fails here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { needTools } from "../support/tools.ts";
import { containerEnv, must, podmanRun, ROOT, run } from "./rootfs.ts";
import { bunStandIn, debianStandIn } from "./standins.ts";

const ARGS = Object.fromEntries(
  [...readFileSync(join(ROOT, "Dockerfile"), "utf8").matchAll(/^ARG (\w+)=(\S+)$/gm)].map((m) => [
    m[1],
    m[2],
  ]),
);
const INDEX = `localhost/image-refresh:${pkg.version}`;
const gate = needTools([
  { tool: "buildah", apt: "buildah" },
  { tool: "podman", apt: "podman" },
  { tool: "runc", apt: "runc" },
  { tool: "busybox", apt: "busybox-static" },
  { tool: "qemu-aarch64-static", apt: "qemu-user-static" },
  { tool: "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", apt: "libc6-arm64-cross" },
]);

describe.skipIf(gate)("npm run build:release --image: the Dockerfile for both architectures", () => {
  let ctr: { env: Record<string, string>; dir: string };
  const trees: string[] = [];
  const debian = `docker.io/library/debian:${ARGS.DEBIAN_VERSION}-slim`;
  /** The image of one platform in the index, by the digest the index lists for it. */
  const instance = (arch: string) => {
    const index = JSON.parse(must(run(["buildah", "manifest", "inspect", INDEX], ctr.env), "inspect").stdout);
    const m = (index.manifests as Array<{ digest: string; platform: { architecture: string } }>).find(
      (x) => x.platform.architecture === arch,
    );
    return `localhost/image-refresh@${m?.digest}`;
  };
  beforeAll(() => {
    ctr = containerEnv();
    trees.push(bunStandIn(`docker.io/oven/bun:${ARGS.BUN_VERSION}`, ctr.env));
    // One name, two architectures, as on Docker Hub: a manifest list of the two stand-ins.
    trees.push(debianStandIn("localhost/standin-debian:amd64", "amd64", ctr.env));
    trees.push(debianStandIn("localhost/standin-debian:arm64", "arm64", ctr.env));
    must(run(["buildah", "manifest", "create", debian], ctr.env), "create the Debian stand-in list");
    for (const arch of ["amd64", "arm64"])
      must(
        run(
          ["buildah", "manifest", "add", debian, `containers-storage:localhost/standin-debian:${arch}`],
          ctr.env,
        ),
        "add a Debian stand-in",
      );
    // The release build itself; --pull=never keeps it on the stand-ins, the host network lets
    // `bun install` reach the npm registry.
    const release = [process.execPath, join(ROOT, "scripts", "release.ts"), "--image", INDEX];
    const budArgs = ["--bud-arg=--pull=never", "--bud-arg=--network=host"];
    must(run([...release, ...budArgs], { ...process.env, ...ctr.env }, 900_000), "run the release build");
  }, 900_000);
  afterAll(() => {
    for (const t of [...trees, ctr.dir]) rmSync(t, { recursive: true, force: true });
  });

  test("the OCI index lists linux/amd64 and linux/arm64", () => {
    const index = JSON.parse(must(run(["buildah", "manifest", "inspect", INDEX], ctr.env), "inspect").stdout);
    const platforms = (index.manifests as Array<{ platform: { os: string; architecture: string } }>)
      .map((m) => `${m.platform.os}/${m.platform.architecture}`)
      .sort();
    expect(platforms).toEqual(["linux/amd64", "linux/arm64"]);
  });

  test("amd64: the built image runs read-only as 65532 with no capabilities", () => {
    expect(podmanRun(instance("amd64"), ["version"], ctr.env)).toEqual({
      code: 0,
      stdout: `image-refresh ${pkg.version}\n`,
      stderr: "",
    });
    const demo = podmanRun(instance("amd64"), ["demo"], ctr.env);
    expect({ code: demo.code, stderr: demo.code === 0 ? "" : demo.stderr }).toEqual({ code: 0, stderr: "" });
  }, 120_000);

  test("arm64: the image's own files run version and demo under qemu", () => {
    const c = must(
      run(["buildah", "from", "--pull=never", instance("arm64")], ctr.env),
      "open",
    ).stdout.trim();
    try {
      const mnt = must(run(["buildah", "mount", c], ctr.env), "mount the arm64 image").stdout.trim();
      const file = must(run(["file", "-b", join(mnt, "usr/local/bin/image-refresh")]), "file").stdout;
      expect(file).toContain("ARM aarch64");
      const qemu = (args: string[]) =>
        run(
          ["qemu-aarch64-static", "-L", mnt, join(mnt, "usr/local/bin/image-refresh"), ...args],
          {},
          300_000,
        );
      expect(qemu(["version"])).toEqual({ code: 0, stdout: `image-refresh ${pkg.version}\n`, stderr: "" });
      const demo = qemu(["demo"]);
      expect({ code: demo.code, stderr: demo.code === 0 ? "" : demo.stderr }).toEqual({
        code: 0,
        stderr: "",
      });
      expect(demo.stdout).toContain("demo finished: every tick did what it should");
    } finally {
      run(["buildah", "rm", c], ctr.env);
    }
  }, 300_000);
});
