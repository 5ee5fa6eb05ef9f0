// The real peers of the pipeline tier: the Collector that peers/otel/build.sh builds into the
// peers cache (keyed by the hash of its go.sum), Debian's Prometheus, and the compiled product.
// Without one of them a test file skips with one line naming what to install; under CI it fails.
import { test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { BINARY } from "../../support/binary.ts";
import { findTool, inCi } from "../../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..", "..");
export const OTEL_DIR = join(ROOT, "peers", "otel");

/** Where build.sh puts the Collector: <cache>/otelcol-<first 16 hex of sha256(go.sum)>/otelcol. */
export function collectorPath(env = process.env): string {
  const sum = readFileSync(join(OTEL_DIR, "otelcol", "go.sum"));
  const key = createHash("sha256").update(sum).digest("hex").slice(0, 16);
  const cache = env.IMAGE_REFRESH_PEERS_CACHE || join(homedir(), ".cache", "image-refresh", "peers");
  return join(cache, `otelcol-${key}`, "otelcol");
}

/** Debian's Prometheus on PATH, or another build named by IMAGE_REFRESH_PROMETHEUS (e.g. a 3.x). */
function prometheusPath(env = process.env): string | undefined {
  const own = env.IMAGE_REFRESH_PROMETHEUS;
  if (own) return existsSync(own) ? own : undefined;
  return findTool("prometheus");
}

export interface Peers {
  otelcol: string;
  prometheus: string;
}

function missing(binary: boolean): Array<{ what: string; how: string }> {
  const out: Array<{ what: string; how: string }> = [];
  if (!existsSync(collectorPath()))
    out.push({
      what: "the OpenTelemetry Collector",
      how: findTool("go") ? "run peers/otel/build.sh" : "install Go, then run peers/otel/build.sh",
    });
  if (!prometheusPath()) out.push({ what: "prometheus", how: "apt-get install prometheus" });
  if (binary && !existsSync(BINARY)) out.push({ what: "dist/image-refresh", how: "npm run build" });
  return out;
}

/**
 * The peers, or undefined after one line per missing one (and, under CI, a failing test that
 * says the same): `describe.skipIf(!peers)`. `binary: false` for a file that runs no tick.
 */
export function needPeers(file: string, opts = { binary: true }): Peers | undefined {
  const gaps = missing(opts.binary);
  for (const g of gaps) {
    const line = `skip: ${file} needs ${g.what} (${g.how})`;
    if (!inCi()) console.log(line);
    else
      test(`needs ${g.what}`, () => {
        throw new Error(`${line}: CI is set, so a missing peer is a failure (npm run test:real builds it)`);
      });
  }
  if (gaps.length > 0) return undefined;
  return { otelcol: collectorPath(), prometheus: prometheusPath() as string };
}
