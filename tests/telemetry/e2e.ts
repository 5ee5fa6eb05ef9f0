// Helpers for the telemetry end-to-end suites (tests/telemetry*.e2e.test.ts): run the compiled
// binary with a collector and keep what that one process exported apart from earlier runs.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CollectedMetric, CollectedSpan, Collector } from "../../sim/collector.ts";
import type { RunResult } from "../support/binary.ts";
import type { World } from "../support/world.ts";

export const PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export const COUNTERS = [
  "image_refresh.attempts",
  "image_refresh.resets",
  "image_refresh.lockouts",
  "image_refresh.skips",
  "image_refresh.reverts",
  "image_refresh.repins",
  "image_refresh.regressions",
] as const;
/** Gauges of the installation (no image attribute), at most one point a tick. */
export const GAUGES = ["image_refresh.last_success_timestamp"] as const;
export type GaugeName = (typeof GAUGES)[number];
/** Gauges per image, one point per image a tick, each with attribute image_refresh.image. */
export const IMAGE_GAUGES = [
  "image_refresh.attempt_count",
  "image_refresh.locked_out",
  "image_refresh.paused",
  "image_refresh.unresolved_streak",
  "image_refresh.skip_streak",
  "image_refresh.frozen",
  "image_refresh.last_verified_timestamp",
] as const;
export type ImageGaugeName = (typeof IMAGE_GAUGES)[number];

/** Every metric and the root span carry the installation: the store, `<namespace>/<name>`. */
export const INSTALLATION_ATTRS = { "image_refresh.installation": "image-refresh/image-refresh-state" };

/** What one process exported; `spans`/`metrics` fit the collector helpers (rootSpan, points...). */
export interface Exported extends RunResult {
  spans: CollectedSpan[];
  metrics: CollectedMetric[];
  /** Wall-clock window of the run in Unix seconds, for the timestamp gauge. */
  startedS: number;
  endedS: number;
}

export async function runWith(
  w: World,
  c: Collector,
  protocol: Protocol,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<Exported> {
  const [s0, m0] = [c.spans.length, c.metrics.length];
  const startedS = Math.floor(Date.now() / 1000);
  const r = await w.run(args, {
    OTEL_EXPORTER_OTLP_ENDPOINT: c.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    ...env,
  });
  // The binary waits for the collector's answer before it exits, so everything has arrived.
  return {
    ...r,
    spans: c.spans.slice(s0),
    metrics: c.metrics.slice(m0),
    startedS,
    endedS: Math.ceil(Date.now() / 1000),
  };
}

/** Every gauge's single value in this export; undefined when the tick did not emit it. */
export function gauges(e: Pick<Exported, "metrics">): Record<GaugeName, number | undefined> {
  const out = {} as Record<GaugeName, number | undefined>;
  for (const name of GAUGES) {
    const pts = e.metrics.filter((m) => m.name === name).flatMap((m) => m.points);
    if (pts.length > 1) throw new Error(`${name}: ${pts.length} points in one tick`);
    out[name] = pts[0]?.value;
  }
  return out;
}

/** Per image key, every per-image gauge's single value; a gauge not emitted is left out. */
export function imageGauges(
  e: Pick<Exported, "metrics">,
): Record<string, Partial<Record<ImageGaugeName, number>>> {
  const out: Record<string, Partial<Record<ImageGaugeName, number>>> = {};
  for (const name of IMAGE_GAUGES)
    for (const p of e.metrics.filter((m) => m.name === name).flatMap((m) => m.points)) {
      const key = String(p.attributes["image_refresh.image"]);
      const mine = out[key] ?? {};
      out[key] = mine;
      if (mine[name] !== undefined) throw new Error(`${name}: two points for image ${key} in one tick`);
      mine[name] = p.value;
    }
  return out;
}

/**
 * Registry credentials the tick must never leak: a dockerconfigjson for the simulated registry
 * (which accepts any user), so the tick fetches a bearer token with Basic auth.
 */
export const REGISTRY_USER = "robot";
export const REGISTRY_PASSWORD = "pw-9f3c1d7e-never-export";

export function useRegistryCredentials(w: World): void {
  const path = join(w.dir, "dockerconfig.json");
  const auth = Buffer.from(`${REGISTRY_USER}:${REGISTRY_PASSWORD}`).toString("base64");
  writeFileSync(path, JSON.stringify({ auths: { [w.registry.host]: { auth } } }));
  w.writeConfig((cfg) => {
    cfg.registry.dockerConfigJson = path;
    // A flapping rollout runs into this timeout; healthy ones settle in well under 100 ms.
    cfg.rolloutTimeout = "1s";
  });
}

/** The secrets in play: API token, registry password and its Basic form, every bearer token issued. */
export function secrets(w: World): string[] {
  const basic = Buffer.from(`${REGISTRY_USER}:${REGISTRY_PASSWORD}`).toString("base64");
  const bearer = w.registry.log
    .map((e) => e.headers.authorization ?? "")
    .filter((h) => h.startsWith("Bearer "))
    .map((h) => h.slice("Bearer ".length));
  return [w.api.token, REGISTRY_PASSWORD, basic, ...new Set(bearer)];
}
