// Everything a tick needs from the world, injected so tests and the demo can supply their own.
import type { Config, ImageConfig, RegistryConfig } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import type { KubeClient } from "../kube/workloads.ts";
import type { Logger } from "../log.ts";
import type { HostMemory, Resolution } from "../registry/registries.ts";
import type { SignatureVerdict } from "../signature/reader.ts";
import type { Telemetry } from "../telemetry.ts";

/**
 * A build whose signature a plan needs checked: the image's key, its repository, the digest due,
 * and the image's own registry (its signatures are where its builds are).
 */
export interface BuildToCheck {
  key: string;
  repository: string;
  digest: string;
  registry: RegistryConfig;
}

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
  /**
   * Finds and verifies the signatures of builds that are due (only those: never on a no-op tick),
   * each on its image's own registry with the keys of its policy; `storedAnswers` is each
   * registry's API root answer to authorize with, by registry host key. Absent: no image's
   * signature can be checked here.
   */
  verifySignatures?: (
    builds: readonly BuildToCheck[],
    opts?: { storedAnswers?: Readonly<Record<string, string>> },
  ) => Promise<Record<string, SignatureVerdict>>;
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
