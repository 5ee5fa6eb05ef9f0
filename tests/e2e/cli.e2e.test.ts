import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { runBinary } from "../support/binary.ts";

describe("command line of the compiled binary", () => {
  test("version prints on stdout and exits 0", async () => {
    const r = await runBinary(["version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`image-refresh ${pkg.version}\n`);
  });
  test("--help exits 0 and lists every command", async () => {
    const r = await runBinary(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["[tick]", "status", "rearm", "demo", "validate", "schema", "version"])
      expect(r.stdout).toContain(`image-refresh ${c}`);
  });
  test("an unknown command exits 2 naming it", async () => {
    const r = await runBinary(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("[image-refresh] ERROR: unknown command: frobnicate");
  });
  test("an unknown flag exits 2 naming it", async () => {
    const r = await runBinary(["tick", "--frob"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown flag: --frob");
  });

  // A compiled Bun program reads .env and bunfig.toml from its working directory unless built
  // not to: an operator running `image-refresh status` in a checkout would get its settings,
  // and a bunfig `preload` would run that directory's code inside the product.
  test("a .env and a bunfig.toml in the working directory are ignored", async () => {
    const dir = mkdtempSync(join(tmpdir(), "image-refresh-cwd-"));
    try {
      writeFileSync(join(dir, ".env"), `IMAGE_REFRESH_CONFIG=${dir}/from-dotenv.yaml\nLOG_FORMAT=json\n`);
      writeFileSync(join(dir, "preload.ts"), 'process.stderr.write("PRELOADED FROM CWD\\n");\n');
      writeFileSync(join(dir, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
      const r = await runBinary(["status"], { cwd: dir });
      expect(r.stderr).not.toContain("PRELOADED FROM CWD");
      expect(r.stderr).not.toContain("from-dotenv.yaml");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("[image-refresh] ERROR: Cannot read config /etc/image-refresh/config.yaml");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
