// The Dockerfile itself, built with `buildah bud` for linux/amd64 and linux/arm64 against local
// stand-ins of its two bases (tests/image-standins.ts), assembled into one OCI index with
// `buildah manifest`; the amd64 image is run with podman, the arm64 image's files under
// qemu-user-static. A broken stage, a wrong path or a missing library fails here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { containerEnv, must, podmanRun, ROOT, run, toolGate } from "./image-rootfs.ts";
import { bunStandIn, debianStandIn } from "./image-standins.ts";

const ARGS = Object.fromEntries(
  [...readFileSync(join(ROOT, "Dockerfile"), "utf8").matchAll(/^ARG (\w+)=(\S+)$/gm)].map((m) => [
    m[1],
    m[2],
  ]),
);
const INDEX = `localhost/image-refresh:${pkg.version}`;
const gate = toolGate("tests/image-dockerfile.test.ts", [
  ["buildah", "buildah"],
  ["podman", "podman"],
  ["runc", "runc"],
  ["busybox", "busybox-static"],
  ["qemu-aarch64-static", "qemu-user-static"],
  ["/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "libc6-arm64-cross"],
]);

if (gate.skip && process.env.CI)
  test("CI has the container tools", () => {
    throw new Error(`Cannot build the Dockerfile: missing ${gate.missing.join(", ")}`);
  });

describe.skipIf(gate.skip)("buildah bud of the Dockerfile, both architectures", () => {
  let ctr: { env: Record<string, string>; dir: string };
  const trees: string[] = [];
  const debian = `docker.io/library/debian:${ARGS.DEBIAN_VERSION}-slim`;
  const bud = (arch: string) =>
    must(
      run(
        [
          "buildah",
          "bud",
          "--pull=never",
          "--network",
          "host",
          "--platform",
          `linux/${arch}`,
          // buildah 1.28 (Debian 12) leaves BUILDPLATFORM empty in FROM lines unless it is given.
          "--build-arg",
          "BUILDPLATFORM=linux/amd64",
          "--layers=false",
          "-t",
          `localhost/image-refresh:${arch}`,
          ROOT,
        ],
        ctr.env,
        600_000,
      ),
      `build the Dockerfile for ${arch}`,
    );
  beforeAll(() => {
    ctr = containerEnv();
    trees.push(bunStandIn(`docker.io/oven/bun:${ARGS.BUN_VERSION}`, ctr.env));
    // One name, two architectures: each build sees the stand-in for its own target.
    trees.push(debianStandIn(debian, "amd64", ctr.env));
    bud("amd64");
    trees.push(debianStandIn(debian, "arm64", ctr.env));
    bud("arm64");
    must(run(["buildah", "manifest", "create", INDEX], ctr.env), "create the index");
    for (const arch of ["amd64", "arm64"])
      must(
        run(
          ["buildah", "manifest", "add", INDEX, `containers-storage:localhost/image-refresh:${arch}`],
          ctr.env,
        ),
        "add to the index",
      );
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
    expect(podmanRun("localhost/image-refresh:amd64", ["version"], ctr.env)).toEqual({
      code: 0,
      stdout: `image-refresh ${pkg.version}\n`,
      stderr: "",
    });
    const demo = podmanRun("localhost/image-refresh:amd64", ["demo"], ctr.env);
    expect({ code: demo.code, stderr: demo.code === 0 ? "" : demo.stderr }).toEqual({ code: 0, stderr: "" });
  }, 120_000);

  test("arm64: the image's own files run version and demo under qemu", () => {
    const c = must(
      run(["buildah", "from", "--pull=never", "localhost/image-refresh:arm64"], ctr.env),
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
