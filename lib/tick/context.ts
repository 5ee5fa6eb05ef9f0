// Everything a tick needs from the world, injected so tests and the demo can supply their own.
import type { Config } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import type { KubeClient } from "../kube/workloads.ts";
import type { Logger } from "../log.ts";
import type { DigestResults } from "../registry/client.ts";
import type { Telemetry } from "../telemetry.ts";

export interface TickContext {
  config: Config;
  /** image-refresh's own ConfigMap: the configured namespace, else the pod's. */
  store: ConfigMapRef;
  kube: KubeClient;
  /**
   * Resolves digests for repositories; called once per tick (run.ts memoises it across the rounds of one tick). With
   * `notBefore` (the registry's stored Retry-After) nothing is sent before that time.
   */
  resolve: (
    repositories: readonly string[],
    opts?: { notBefore?: Date; storedAnswer?: string },
  ) => Promise<DigestResults>;
  log: Logger;
  telemetry: Telemetry;
  /** The tick's own deadline and SIGTERM. */
  signal: AbortSignal;
  dryRun: boolean;
  /** Who posts Events: the pod name in a CronJob ($HOSTNAME). */
  instance: string;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}
