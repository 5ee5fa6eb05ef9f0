// Everything a tick needs from the world, injected so tests and the demo can supply their own.
import type { Config } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import type { KubeClient } from "../kube/workloads.ts";
import type { Logger } from "../log.ts";
import type { DigestResults } from "../registry/client.ts";
import type { SignatureVerdict } from "../signature/reader.ts";
import type { Telemetry } from "../telemetry.ts";

/** A build whose signature a plan needs checked: the image's key, its repository, the digest due. */
export interface BuildToCheck {
  key: string;
  repository: string;
  digest: string;
}

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
  /**
   * Finds and verifies the signatures of builds that are due (only those: never on a no-op tick),
   * with the keys of each image's policy; absent: no image's signature can be checked here.
   */
  verifySignatures?: (
    builds: readonly BuildToCheck[],
    opts?: { storedAnswer?: string },
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
