// Docker cannot run in CI, so the image is proven piecewise: the Dockerfile's final stage holds
// nothing but COPYs and a non-root USER, and the very binary that stage carries (the musl build)
// is compiled here, checked to need exactly the loader and libraries the Dockerfile copies, and
// run under musl's loader. Debian has no musl-linked libstdc++, so the run uses Debian's
// libstdc++ through scripts/musl-glibc-shim.c; the image uses Alpine's (see that file).
import { beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { needTools } from "./tools.ts";

const ROOT = join(import.meta.dir, "..");
/** The flags of `npm run build` (--compile, --bytecode, ...), without its --outfile. */
const BUILD_FLAGS = pkg.scripts.build
  .split(/\s+/)
  .filter((w, i, all) => w.startsWith("--") && w !== "--outfile" && all[i - 1] !== "--outfile");
const MUSL_BINARY = join(ROOT, "dist", "image-refresh-musl");
const COMPAT = join(ROOT, "dist", "musl-compat");
const MUSL_LOADER = "/lib/ld-musl-x86_64.so.1";
const noMusl = needTools([
  { tool: MUSL_LOADER, apt: "musl" },
  { tool: "musl-gcc", apt: "musl-tools" },
  { tool: "gcc", apt: "gcc" },
  { tool: "readelf", apt: "binutils" },
]);
// musl's loader serves these names itself; everything else NEEDED must be a file in the image.
const MUSL_SELF = new Set(["libc.musl-x86_64.so.1", "libc.so", "libc.so.6", "libm.so.6"]);

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

function tool(name: string, apt: string): string {
  const path = Bun.which(name);
  if (!path) throw new Error(`Cannot run the image checks: ${name} is missing (CI installs Debian's ${apt})`);
  return path;
}

function run(cmd: string[], env: Record<string, string | undefined> = {}) {
  const r = Bun.spawnSync(cmd, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const dockerfile = parseDockerfile(readFileSync(join(ROOT, "Dockerfile"), "utf8"));
const finalStage = dockerfile.at(-1) ?? [];
const copiedPaths = finalStage.filter((i) => i.op === "COPY").flatMap((i) => i.args.split(/\s+/).slice(-1));

describe("Dockerfile", () => {
  test("the final stage starts from nothing: scratch or distroless", () => {
    expect(finalStage[0]?.args).toMatch(/^(scratch|gcr\.io\/distroless\/static\S*)$/);
  });
  test("the final stage has no RUN, so no shell or package manager is needed or present", () => {
    const allowed = new Set([
      "FROM",
      "COPY",
      "USER",
      "ENTRYPOINT",
      "CMD",
      "ENV",
      "LABEL",
      "ARG",
      "WORKDIR",
      "EXPOSE",
    ]);
    expect(finalStage.map((i) => i.op).filter((op) => !allowed.has(op))).toEqual([]);
    expect(finalStage.filter((i) => i.op === "COPY").every((i) => i.args.startsWith("--from="))).toBe(true);
    for (const bin of ["/bin/sh", "/bin/busybox", "/sbin/apk", "/usr/bin/apt"])
      expect(copiedPaths).not.toContain(bin);
  });
  test("it runs as a non-root numeric user, in exec form", () => {
    const user = finalStage.filter((i) => i.op === "USER").at(-1)?.args ?? "";
    expect(user).toMatch(/^[1-9][0-9]*(:[1-9][0-9]*)?$/);
    expect(user.split(":")[0]).toBe("65532"); // the runAsUser of k8s/base/cronjob.yaml
    expect(finalStage.find((i) => i.op === "ENTRYPOINT")?.args).toStartWith(
      '["/usr/local/bin/image-refresh"',
    );
  });
  test("the build stage compiles the musl binary from the locked dependencies", () => {
    const build = dockerfile.find((s) => s[0]?.args.endsWith(" AS build")) ?? [];
    const runs = build.filter((i) => i.op === "RUN").map((i) => i.args);
    expect(runs.some((r) => r.includes("--frozen-lockfile"))).toBe(true);
    expect(runs.some((r) => r.includes("--compile") && r.includes("--target=bun-linux-x64-musl"))).toBe(true);
  });
  test("the build stage compiles with every flag of npm run build", () => {
    const compile = dockerfile.flat().find((i) => i.op === "RUN" && i.args.startsWith("bun build "));
    const flags = compile?.args.split(/\s+/) ?? [];
    for (const flag of BUILD_FLAGS) expect(flags).toContain(flag);
  });
  test("the final stage carries the loader, libstdc++, libgcc_s and a CA bundle", () => {
    for (const p of [MUSL_LOADER, "/usr/lib/libstdc++.so.6", "/usr/lib/libgcc_s.so.1"])
      expect(copiedPaths).toContain(p);
    expect(copiedPaths).toContain("/etc/ssl/certs/ca-certificates.crt");
  });
});

describe.skipIf(noMusl)("the musl binary the image carries", () => {
  beforeAll(() => {
    // The musl runtime comes from the npm registry (@oven/bun-linux-x64-musl) on first use.
    const args = [...BUILD_FLAGS, "--target=bun-linux-x64-musl", "--outfile", MUSL_BINARY];
    // Full environment: the compile may fetch the runtime and needs the user's registry settings.
    const r = run([process.execPath, "build", join(ROOT, "refresh.ts"), ...args], process.env);
    if (r.code !== 0) throw new Error(`Cannot compile the musl binary: ${r.stderr}`);
    buildCompat();
  }, 300_000);

  test("it asks for musl's loader and only libraries the Dockerfile copies", () => {
    const readelf = tool("readelf", "binutils");
    const out = run([readelf, "-ldW", MUSL_BINARY]).stdout;
    expect(out).toContain(`[Requesting program interpreter: ${MUSL_LOADER}]`);
    const needed = [...out.matchAll(/\(NEEDED\)\s+Shared library: \[(.+?)\]/g)].map((m) => m[1] ?? "");
    expect(needed).toContain("libstdc++.so.6");
    const files = needed.filter((n) => !MUSL_SELF.has(n));
    for (const lib of files) expect(copiedPaths).toContain(`/usr/lib/${lib}`);
  });

  test("version prints the package version", () => {
    const r = runMusl(["version"]);
    expect(r).toEqual({ code: 0, stdout: `image-refresh ${pkg.version}\n`, stderr: "" });
  });

  test("--help exits 0 and lists every command", () => {
    const r = runMusl(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["[tick]", "status", "rearm", "demo", "version"])
      expect(r.stdout).toContain(`image-refresh ${c}`);
  });

  test("demo runs its scripted scenario to the end", () => {
    const r = runMusl(["demo"]);
    expect({ code: r.code, stderr: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.stdout).toContain("outcome");
  }, 120_000);
});

/** Debian's libstdc++ and libgcc_s plus the shim, in one directory the loader searches first. */
function buildCompat() {
  tool(MUSL_LOADER, "musl");
  const cc = tool("musl-gcc", "musl-tools");
  mkdirSync(COMPAT, { recursive: true });
  const shim = join(ROOT, "scripts", "musl-glibc-shim.c");
  const r = run([cc, "-shared", "-fPIC", "-O2", "-o", join(COMPAT, "ld-linux-x86-64.so.2"), shim]);
  if (r.code !== 0) throw new Error(`Cannot build the musl shim: ${r.stderr}`);
  for (const lib of ["libstdc++.so.6", "libgcc_s.so.1"]) {
    const from = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"]
      .map((d) => join(d, lib))
      .find(existsSync);
    if (!from) throw new Error(`Cannot find Debian's ${lib} (package libstdc++6 / libgcc-s1)`);
    copyFileSync(from, join(COMPAT, lib));
  }
}

/** Executes the binary directly, so the kernel starts its PT_INTERP loader as it will in the image. */
function runMusl(args: string[]) {
  return run([MUSL_BINARY, ...args], { LD_LIBRARY_PATH: COMPAT });
}
