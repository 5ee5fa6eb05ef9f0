// The Dockerfile read as text, and the binaries it builds read with readelf: the final stage holds
// nothing but a COPY and a non-root USER; the build compiles with every flag of `npm run build`;
// and each architecture's binary needs exactly the loader and libraries the build stage stages.
// Building and running the image itself: tests/image/run.test.ts and tests/image/dockerfile.test.ts.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { needTools } from "../support/tools.ts";
import { type Arch, BUILD_FLAGS, GLIBC, LIBS, ROOT, run } from "./rootfs.ts";

interface Instruction {
  op: string;
  args: string;
}
function parseDockerfile(text: string): Instruction[][] {
  const lines = text.replace(/\\\n/g, " ").split("\n");
  const stages: Instruction[][] = [];
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const [op = "", ...rest] = line.split(/\s+/);
    const ins = { op: op.toUpperCase(), args: rest.join(" ") };
    if (ins.op === "FROM") stages.push([]);
    stages.at(-1)?.push(ins); // ARGs before the first FROM belong to no stage
  }
  return stages;
}

const text = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const dockerfile = parseDockerfile(text);
const finalStage = dockerfile.at(-1) ?? [];
const build = dockerfile.find((s) => s[0]?.args.endsWith(" AS build")) ?? [];
const buildRuns = build.filter((i) => i.op === "RUN").map((i) => i.args);

describe("Dockerfile", () => {
  test("no # syntax= line (it pulls a frontend image); the Bun version is package.json's", () => {
    expect(text).not.toMatch(/^#\s*syntax=/m);
    expect(text).toMatch(
      new RegExp(`^ARG BUN_VERSION=${pkg.devDependencies.bun.replace(/\./g, "\\.")}$`, "m"),
    );
  });
  test("the final stage starts from nothing and only copies the staged root filesystem", () => {
    expect(finalStage[0]?.args).toBe("scratch");
    const allowed = new Set(["FROM", "COPY", "USER", "ENTRYPOINT", "CMD", "LABEL"]);
    expect(finalStage.map((i) => i.op).filter((op) => !allowed.has(op))).toEqual([]);
    expect(finalStage.filter((i) => i.op === "COPY").map((i) => i.args)).toEqual(["--from=build /rootfs/ /"]);
  });
  test("it runs as a non-root numeric user, in exec form", () => {
    const user = finalStage.filter((i) => i.op === "USER").at(-1)?.args ?? "";
    expect(user).toBe("65532:65532"); // the runAsUser of k8s/base/cronjob.yaml
    expect(finalStage.find((i) => i.op === "ENTRYPOINT")?.args).toBe('["/usr/local/bin/image-refresh"]');
  });
  test("the build runs on the build machine and compiles for TARGETARCH from the locked dependencies", () => {
    expect(build[0]?.args).toMatch(/^--platform=\$BUILDPLATFORM oven\/bun:\$\{BUN_VERSION\} AS build$/);
    expect(buildRuns.some((r) => r.includes("--frozen-lockfile"))).toBe(true);
    const compile = buildRuns.find((r) => r.includes("bun build ")) ?? "";
    expect(compile).toContain("--target=bun-linux-$target");
    expect(compile).toContain("amd64) target=x64");
    expect(compile).toContain("arm64) target=arm64");
    for (const flag of BUILD_FLAGS) expect(compile.split(/\s+/)).toContain(flag);
  });
  test("the build stage stages the loader for each architecture and the libraries readelf names", () => {
    const stage = buildRuns.find((r) => r.includes("loader=")) ?? "";
    for (const arch of ["amd64", "arm64"] as Arch[])
      expect(stage).toContain(`${arch}) loader=${GLIBC[arch].loader}`);
    for (const lib of LIBS) expect(stage).toContain(`/runtime/${lib}`);
    expect(stage).toContain("/rootfs/etc/ssl/certs/");
    expect(stage).toContain("nonroot:x:65532:65532:");
  });
});

const gate = needTools([{ tool: "readelf", apt: "binutils" }]);

describe.skipIf(gate)("each architecture's binary needs only what the image carries", () => {
  const binaries: Partial<Record<Arch, string>> = {};
  beforeAll(() => {
    // The release build itself (npm run build:release), with the environment a cross-compile needs.
    const r = run([process.execPath, join(ROOT, "scripts", "release.ts")], process.env, 300_000);
    if (r.code !== 0) throw new Error(`Cannot run the release build: ${r.stderr}`);
    for (const arch of ["amd64", "arm64"] as Arch[])
      binaries[arch] = join(ROOT, "dist", `image-refresh-linux-${arch}`);
  }, 300_000);
  for (const arch of ["amd64", "arm64"] as Arch[]) {
    test(`${arch}: PT_INTERP is the staged loader; NEEDED is the staged libraries`, () => {
      const out = run(["readelf", "-ldW", binaries[arch] ?? ""]).stdout;
      expect(out).toContain(`[Requesting program interpreter: ${GLIBC[arch].loader}]`);
      const needed = [...out.matchAll(/\(NEEDED\)\s+Shared library: \[(.+?)\]/g)].map((m) => m[1] ?? "");
      const loaderName = GLIBC[arch].loader.split("/").pop();
      expect(needed.filter((n) => n !== loaderName).sort()).toEqual([...LIBS].sort());
    });
  }
});

const qemu = needTools([
  { tool: "qemu-aarch64-static", apt: "qemu-user-static" },
  { tool: `${GLIBC.arm64.dir}/${GLIBC.arm64.loader.split("/").pop()}`, apt: "libc6-arm64-cross" },
]);

describe.skipIf(qemu || gate)("the arm64 release binary under qemu-user-static", () => {
  // -L: the loader and libraries are looked up under Debian's arm64 C library (libc6-arm64-cross).
  const arm64 = (args: string[]) =>
    run(
      [
        "qemu-aarch64-static",
        "-L",
        "/usr/aarch64-linux-gnu",
        join(ROOT, "dist", "image-refresh-linux-arm64"),
        ...args,
      ],
      {},
      300_000,
    );
  test("version", () => {
    expect(arm64(["version"])).toEqual({ code: 0, stdout: `image-refresh ${pkg.version}\n`, stderr: "" });
  });
  test("demo runs its scripted scenario to the end", () => {
    const r = arm64(["demo"]);
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.stdout).toContain("demo finished: every tick did what it should");
  }, 300_000);
});
