// The shipped routing (k8s/monitoring/alertmanager.yaml) checked by the amtool built with the
// Alertmanager the pipeline tier runs (peers/alertmanager): it loads as shipped, the compressed
// copy alertmanager.test.ts runs loads too, and an image-refresh alert routes to its receiver.
// What it groups and inhibits is read in tests/telemetry/monitoring-alertmanager.test.ts and
// delivered for real in alertmanager.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needPeers, peer } from "../peers.ts";
import { alertmanagerConfig, SHIPPED_ALERTMANAGER } from "./alertmanager.ts";

const FILE = "tests/real/pipeline/amtool.test.ts";
const missing = needPeers(["alertmanager"], FILE);
const dir = mkdtempSync(join(tmpdir(), "image-refresh-amtool-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function amtool(...args: string[]): { code: number; out: string } {
  const run = Bun.spawnSync([peer("alertmanager", "amtool"), ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: run.exitCode, out: `${run.stdout}${run.stderr}` };
}

describe.skipIf(missing)("amtool on the shipped routing", () => {
  test("check-config accepts alertmanager.yaml as shipped", () => {
    const r = amtool("check-config", SHIPPED_ALERTMANAGER);
    expect(r).toMatchObject({ code: 0 });
    expect(r.out).toContain("SUCCESS");
    const shipped = Bun.YAML.parse(readFileSync(SHIPPED_ALERTMANAGER, "utf8")) as {
      inhibit_rules: unknown[];
    };
    expect(r.out).toContain(`${shipped.inhibit_rules.length} inhibit rules`);
  });

  test("check-config accepts the compressed copy the pipeline tier runs", () => {
    const file = join(dir, "compressed.yaml");
    writeFileSync(file, JSON.stringify(alertmanagerConfig("http://127.0.0.1:9/alerts")));
    expect(amtool("check-config", file)).toMatchObject({ code: 0 });
  });

  test("an image-refresh alert routes to the on-call receiver", () => {
    const r = amtool(
      "config",
      "routes",
      "test",
      `--config.file=${SHIPPED_ALERTMANAGER}`,
      "--verify.receivers=image-refresh-on-call",
      "alertname=ImageRefreshLockedOut",
      "image_refresh_installation=image-refresh/image-refresh-state",
      "image_refresh_image=myorg/api",
    );
    expect(r).toMatchObject({ code: 0 });
    expect(r.out.trim()).toBe("image-refresh-on-call");
  });
});
