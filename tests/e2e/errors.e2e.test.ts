// Errors that help: an API server that cannot be reached is named by host and port, the final
// error says how many tries and how long they took, and each retry is logged (info) as it happens.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exampleConfig } from "../../lib/example-config.ts";
import { runBinary } from "../support/binary.ts";

test("an unreachable API server: host and port, tries and total time, every retry logged", async () => {
  // A port nothing listens on: bound, then released.
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port;
  await s.stop(true);
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-errors-"));
  try {
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}" } }]\nusers: [{ name: u, user: { token: t0ken-abc } }]\ncontexts: [{ name: c, context: { cluster: c, user: u } }]\n`,
    );
    const config = join(dir, "config.json");
    writeFileSync(config, JSON.stringify(exampleConfig()));
    const r = await runBinary(["tick", "--config", config, "--kubeconfig", kubeconfig]);
    expect(r.code).toBe(1);
    const lines = r.stderr.split("\n");
    expect(
      lines.filter((l) => l.startsWith("[image-refresh] retrying GET Deployment apps/api in ")),
    ).toHaveLength(2);
    const error = lines.find((l) => l.includes("ERROR")) ?? "";
    expect(error).toContain(`NetworkError 127.0.0.1:${port}: `);
    expect(error).toMatch(/ \(3 tries over \d+\.\ds\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
