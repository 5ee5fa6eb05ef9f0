// What every cluster-facing command needs, built once from the command line and environment:
// configuration, logger, telemetry, API client, registry resolver, and the tick's deadline.
// Anything wrong here is a usage or configuration error (exit 2) and no request has been made.
import { readFileSync } from "node:fs";
import type { CliArgs } from "../cli.ts";
import { UsageError } from "../cli.ts";
import { type Config, ConfigError, loadConfig, type RegistryConfig, storeRef } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import { resolveConnection } from "../kube/kubeconfig.ts";
import { createKubeClient, type KubeClient } from "../kube/workloads.ts";
import { createLogger, type Logger } from "../log.ts";
import { identityLogins } from "../registry/cloud.ts";
import { preconnectRegistry } from "../registry/preconnect.ts";
import { type PullSecrets, pullSecrets } from "../registry/pull-secrets.ts";
import { resolveRegistries } from "../registry/registries.ts";
import type { FetchOptions } from "../signature/fetcher.ts";
import type { PolicyKeys } from "../signature/policy.ts";
import { mark } from "../startup-timing.ts";
import { telemetryConfigured } from "../telemetry/env.ts";
import { noopTelemetry, type Telemetry } from "../telemetry.ts";
import type { TickContext } from "../tick/index.ts";
import { distinctTargets } from "../workload.ts";

export type Env = Record<string, string | undefined>;
mark("runtime-module");

export interface Runtime {
  config: Config;
  /** image-refresh's own ConfigMap: the configured namespace, else the pod's. */
  store: ConfigMapRef;
  log: Logger;
  telemetry: Telemetry;
  kube: KubeClient;
  /** Aborted on the tick's deadline, SIGTERM or SIGINT. */
  controller: AbortController;
  /** Why the registry is asked anonymously although a pull secret is configured; status prints it. */
  anonymousBecause?: string;
  /** Each image's signature policy keys, imported at start-up (none when no image has a policy). */
  policyKeys: PolicyKeys;
  tickContext(dryRun: boolean): TickContext;
}

export interface RuntimeOptions {
  env: Env;
  readFile?: (path: string) => string;
  /** Injected by the demo, which runs ticks in-process against its own simulators. */
  telemetry?: Telemetry;
  log?: Logger;
  registryCa?: string;
}

export function logFormat(args: CliArgs, env: Env): "text" | "json" {
  const f = args.logFormat ?? env.LOG_FORMAT ?? "text";
  if (f !== "text" && f !== "json")
    throw new UsageError(`Cannot use LOG_FORMAT: current value is "${f}", expected text or json`);
  return f;
}

export async function createRuntime(args: CliArgs, opts: RuntimeOptions): Promise<Runtime> {
  const { env } = opts;
  const readFile = opts.readFile ?? ((p: string) => readFileSync(p, "utf8"));
  const format = logFormat(args, env);
  const config = loadConfig(args.config, env, readFile);
  const store = storeRef(config, readFile);
  const keys = await policyKeysFor(args, config, readFile);
  mark("config");
  const conn = resolveConnection({
    kubeconfigFlag: args.kubeconfig,
    context: args.context,
    env,
    readFile,
  });
  mark("kubeconfig");
  // rearm never asks a registry, nor does reject given a DIGEST, so neither reads a pull secret.
  const asks = args.command !== "rearm" && !(args.command === "reject" && args.digest);
  const pull = asks
    ? pullSecrets(config, args.command !== "tick", readFile)
    : ({ credentials: new Map(), missing: new Map(), warnings: [] } satisfies PullSecrets);
  // The exporter may warn while it starts, before the logger that carries its span ids exists:
  // those lines go out in the same format, without ids.
  let log: Logger | undefined;
  const early = opts.log ?? createLogger({ format });
  const warn = (message: string) => (log ?? early).warn(message);
  const telemetry = opts.telemetry ?? (await loadTelemetry(store, env, warn));
  log =
    opts.log ??
    createLogger({ format, ids: () => telemetry.activeIds(), debug: env.IMAGE_REFRESH_DEBUG === "1" });
  mark("telemetry");
  const controller = new AbortController();
  const kube = createKubeClient(conn, {
    requestTimeoutMs: config.requestTimeoutMs,
    signal: controller.signal,
    telemetry,
    log,
  });
  for (const warning of pull.warnings) log.warn(warning);
  if (keys.warning) log.warn(keys.warning);
  // One registry's requests, tag look-ups and signature look-ups alike: its own credentials, and
  // a cloud identity's login shared by both (one per registry host and tick).
  const hostOptions =
    (logins: ReturnType<typeof identityLogins>) => (registry: RegistryConfig, hostKey: string) => ({
      ...registry,
      credentials: pull.credentials.get(hostKey),
      identity: logins(registry, hostKey),
      requestTimeoutMs: config.requestTimeoutMs,
      signal: controller.signal,
      telemetry,
      log,
      ca: opts.registryCa,
    });
  const tickContext = (dryRun: boolean): TickContext =>
    tickContextWith(dryRun, hostOptions(identityLogins(env, readFile)));
  const tickContextWith = (
    dryRun: boolean,
    optionsFor: (registry: RegistryConfig, hostKey: string) => FetchOptions,
  ): TickContext => ({
    config,
    store,
    kube,
    log,
    telemetry,
    signal: controller.signal,
    dryRun,
    instance: env.HOSTNAME ?? "image-refresh",
    now: Date.now,
    sleep: (ms) => Bun.sleep(ms),
    resolve: (images, memory = {}) =>
      resolveRegistries(images, memory, (group, remembered) => ({
        ...remembered,
        ...optionsFor(group.registry, group.hostKey),
        noCredential: pull.missing.get(group.hostKey),
      })),
    // Without the policy's keys here (status on a laptop) no signature is checked: each build
    // due stays signature_unchecked.
    ...(keys.keys.size > 0 ? { verifySignatures: signaturesChecker(keys.keys, optionsFor) } : {}),
  });
  mark("runtime");
  const anonymousBecause = pull.warnings.length ? pull.warnings.join("; ") : undefined;
  return {
    config,
    store,
    log,
    telemetry,
    kube,
    controller,
    tickContext,
    anonymousBecause,
    policyKeys: keys.keys,
  };
}

/**
 * A tick's first requests, started as soon as the configuration is known to be valid, so that
 * they travel while the tick's own modules load: the store's GET (the tick's read of it takes the
 * answer) and the registry's connection (preconnect.ts), which the registry's first request finds
 * open once the store has said it may be asked. The GET not with telemetry exported: every request
 * span belongs under the tick's span, which does not exist yet; a connection has no span.
 */
export function startConnecting(rt: Runtime, env: Env): void {
  if (!telemetryConfigured(env)) rt.kube.configMaps.prefetch(rt.store);
  preconnectRegistry(rt.config, env);
}

/**
 * The tick's signature check: each build with its image's keys, on its image's own registry.
 * Loaded on first use: only a tick with a new build due under a policy looks signatures up, and
 * no other tick pays for the code.
 */
function signaturesChecker(
  keys: PolicyKeys,
  optionsFor: (registry: RegistryConfig, hostKey: string) => FetchOptions,
): NonNullable<TickContext["verifySignatures"]> {
  return async (builds, more) =>
    (await import("../signature/fetcher.ts")).checkEachRegistry(
      builds.map((b) => ({ ...b, keys: keys.get(b.key) ?? [] })),
      optionsFor,
      more?.storedAnswers,
    );
}

/**
 * The signature policy's keys: a tick refuses to start without them (exit 2, naming the file). A
 * human's `status` from a laptop, where the mounted keys are not, warns and checks no signature;
 * rearm and reject verify nothing, so neither reads them.
 */
async function policyKeysFor(
  args: CliArgs,
  config: Config,
  readFile: (p: string) => string,
): Promise<{ keys: PolicyKeys; warning?: string }> {
  if (!config.images.some((i) => i.verify) || args.command === "rearm" || args.command === "reject")
    return { keys: new Map() };
  try {
    const { loadPolicyKeys } = await import("../signature/policy.ts");
    return { keys: await loadPolicyKeys(config, readFile) };
  } catch (err) {
    if (args.command === "tick" || !(err instanceof ConfigError)) throw err;
    return {
      keys: new Map(),
      warning: `${err.message.replace(/\n\s*-\s*/g, " ")}: no signature is checked here`,
    };
  }
}

async function loadTelemetry(
  store: ConfigMapRef,
  env: Env,
  warn: (message: string) => void,
): Promise<Telemetry> {
  if (!telemetryConfigured(env)) return noopTelemetry();
  // Loaded only here: importing the SDK costs ~20 ms that a tick with telemetry off must not pay.
  const { createTelemetry } = await import("../../exporter.ts");
  const { VERSION } = await import("../version.ts");
  return createTelemetry({
    env,
    storeNamespace: store.namespace,
    storeName: store.name,
    version: VERSION,
    warn,
  });
}

/**
 * The tick's own deadline: every workload may take its rolloutTimeout, plus room for the reads
 * and writes around them. activeDeadlineSeconds in the CronJob sits above this.
 */
export function tickBudgetMs(config: Config): number {
  return distinctTargets(config).length * config.rolloutTimeoutMs + 12 * config.requestTimeoutMs;
}
