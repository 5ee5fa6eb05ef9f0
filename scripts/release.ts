// The release build: `npm run build:release` makes dist/image-refresh-linux-amd64 and
// dist/image-refresh-linux-arm64 with the flags of `npm run build`; with `--image NAME:TAG` it
// also builds the image for both architectures from the Dockerfile into one OCI index (buildah),
// and with `--push` pushes the index and both images. Bun fetches the runtime for a target it is
// not running on from the npm registry (@oven/bun-linux-aarch64), once, into its cache.
//
//   npm run build:release
//   npm run build:release -- --image ghcr.io/acme/image-refresh:0.1.0 --push
//   npm run build:release -- --image localhost/image-refresh:dev --bud-arg=--pull=never
//
// `--bud-arg=X` (repeatable) is passed to `buildah bud` as is; tests/image/dockerfile.test.ts
// uses it to build against local stand-in bases.
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };

const ROOT = join(import.meta.dir, "..");
export const TARGETS = { amd64: "bun-linux-x64", arm64: "bun-linux-arm64" } as const;

/** The flags of `npm run build`, so every artefact is compiled the same way. */
export const BUILD_FLAGS = pkg.scripts.build
  .split(/\s+/)
  .filter((w, i, all) => w.startsWith("--") && w !== "--outfile" && all[i - 1] !== "--outfile");

function sh(cmd: string[], mayFail = false): void {
  console.error(`+ ${cmd.join(" ")}`);
  const r = Bun.spawnSync(cmd, { cwd: ROOT, stdout: "inherit", stderr: "inherit", env: process.env });
  if (r.exitCode !== 0 && !mayFail)
    throw new Error(`Cannot release: ${cmd[0]} ${cmd[1] ?? ""} exited ${r.exitCode}`);
}

function binaries(): void {
  for (const [arch, target] of Object.entries(TARGETS)) {
    const out = join("dist", `image-refresh-linux-${arch}`);
    sh([process.execPath, "build", "./refresh.ts", ...BUILD_FLAGS, `--target=${target}`, "--outfile", out]);
  }
}

/** Both images into one manifest list; the Bun version comes from package.json, nowhere else. */
function image(name: string, push: boolean, budArgs: string[]): void {
  const hostArch = process.arch === "arm64" ? "arm64" : "amd64";
  // `bud --manifest` adds to an existing list: a second run would list each platform twice.
  sh(["buildah", "manifest", "rm", name], true);
  sh([
    "buildah",
    "bud",
    "--platform",
    "linux/amd64,linux/arm64",
    "--manifest",
    name,
    "--build-arg",
    `BUN_VERSION=${pkg.devDependencies.bun}`,
    // buildah 1.28 leaves BUILDPLATFORM empty in FROM lines; Docker buildx sets it itself.
    "--build-arg",
    `BUILDPLATFORM=linux/${hostArch}`,
    ...budArgs,
    ".",
  ]);
  if (push) sh(["buildah", "manifest", "push", "--all", name, `docker://${name}`]);
}

function main(argv: string[]): void {
  const at = argv.indexOf("--image");
  const name = at >= 0 ? argv[at + 1] : undefined;
  if (at >= 0 && !name) throw new Error("Cannot release: --image needs NAME:TAG");
  if (argv.includes("--push") && !name) throw new Error("Cannot release: --push needs --image NAME:TAG");
  const budArgs = argv.filter((a) => a.startsWith("--bud-arg=")).map((a) => a.slice("--bud-arg=".length));
  binaries();
  if (name) image(name, argv.includes("--push"), budArgs);
}

if (import.meta.main) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error((e as Error).message);
    process.exit(1);
  }
}
