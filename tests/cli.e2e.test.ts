import { describe, expect, test } from "bun:test";
import pkg from "../package.json" with { type: "json" };
import { runBinary } from "./binary.ts";

describe("command line of the compiled binary", () => {
  test("version prints on stdout and exits 0", async () => {
    const r = await runBinary(["version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`image-refresh ${pkg.version}\n`);
  });
  test("--help exits 0 and lists every command", async () => {
    const r = await runBinary(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["[tick]", "status", "rearm", "demo", "version"])
      expect(r.stdout).toContain(`image-refresh ${c}`);
  });
  test("an unknown command exits 2 naming it", async () => {
    const r = await runBinary(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("[image-refresh] unknown command: frobnicate");
  });
  test("an unknown flag exits 2 naming it", async () => {
    const r = await runBinary(["tick", "--frob"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown flag: --frob");
  });
});
