// Everything a tick needs from the world, injected so tests and the demo can supply their own.
import type { Config, ImageConfig } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import type { KubeClient } from "../kube/workloads.ts";
import type { Logger } from "../log.ts";
import type { HostMemory, Resolution } from "../registry/registries.ts";
import type { Telemetry } from "../telemetry.ts";

export interface TickContext {
  config: Config;
  /** image-refresh's own ConfigMap: the configured namespace, else the pod's. */
  store: ConfigMapRef;
  kube: KubeClient;
  /**
   * Resolves each image's tag against its own registry; called once per tick (run.ts memoises it
   * across the rounds of one tick). `memory` is by registry host key: with a host's `notBefore`
   * (its stored Retry-After) nothing is sent to it before that time.
   */
  resolve: (
    images: readonly ImageConfig[],
    memory?: Readonly<Record<string, HostMemory>>,
  ) => Promise<Resolution>;
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
