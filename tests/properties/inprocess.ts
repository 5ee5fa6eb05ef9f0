// The real tick, in-process, against the simulated API server and registry over real HTTPS:
// the same wiring as `image-refresh demo` (createRuntime with virtual files), with timeouts
// short enough that hundreds of ticks fit in a test run. One world serves every property run;
// `reset()` puts the workloads back to a fresh, healthy, un-annotated state with no store.
import type { CliArgs } from "../../lib/cli.ts";
import { rearmCommand } from "../../lib/commands/rearm.ts";
import { createRuntime, tickBudgetMs } from "../../lib/commands/runtime.ts";
import { createLogger } from "../../lib/log.ts";
import { noopTelemetry } from "../../lib/telemetry.ts";
import type { TickContext } from "../../lib/tick/context.ts";
import { runTick, type TickResult } from "../../lib/tick/run.ts";
import { objectPath, patch } from "../../sim/apiserver/driver.ts";
import { type FaultRule, type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import type { Fault } from "../../sim/faults.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { scenarioConfig } from "../../sim/scenario.ts";
import { generateTls } from "../../sim/tls.ts";

export const PREFIX = "image-refresh.io";
export const MAX_ATTEMPTS = 2;
export const MAX_SKIPS = 3;
export const MAX_UNRESOLVED = 2;
/** The legacy `state` workload the config still names: annotations there migrate into the store. */
export const STATE_PATH = "/apis/apps/v1/namespaces/apps/deployments/api";
/** The store: image-refresh's own ConfigMap (scenarioConfig's `store`). */
export const STORE = ["image-refresh", "image-refresh-state"] as const;
export const STORE_PATH = "/api/v1/namespaces/image-refresh/configmaps/image-refresh-state";
/** Where the first store write creates it. */
export const STORE_COLLECTION = "/api/v1/namespaces/image-refresh/configmaps";

export const WORKLOADS = [
  { kind: "Deployment", namespace: "apps", name: "api", containers: ["api", "sidecar"], replicas: 2 },
  { kind: "Deployment", namespace: "apps", name: "api-proxy", containers: ["proxy"], replicas: 1 },
  { kind: "DaemonSet", namespace: "agents", name: "node-agent", containers: ["agent"], replicas: 2 },
] as const;
export type WorkloadSpec = (typeof WORKLOADS)[number];

/**
 * Image key → its target workloads and containers, as the config below says. api and sidecar
 * share Deployment apps/api, so they move together; node-agent shares nothing with them.
 */
export const TARGETS: Record<string, Array<{ w: WorkloadSpec; container: string }>> = {
  api: [
    { w: WORKLOADS[0], container: "api" },
    { w: WORKLOADS[1], container: "proxy" },
  ],
  "node-agent": [{ w: WORKLOADS[2], container: "agent" }],
  sidecar: [{ w: WORKLOADS[0], container: "sidecar" }],
};
export const IMAGE_KEYS = Object.keys(TARGETS);

const config = (registryHost: string) => {
  const c = scenarioConfig(registryHost, {
    maxRefreshAttempts: MAX_ATTEMPTS,
    maxSkipTicks: MAX_SKIPS,
    maxUnresolvedTicks: MAX_UNRESOLVED,
    rolloutTimeout: "400ms",
    requestTimeout: "300ms",
  });
  const sidecar = { kind: "Deployment", name: "api", container: "sidecar" };
  // `state` is only a legacy location now: the stories that begin with its annotations migrate them
  const state = { kind: "Deployment", namespace: "apps", name: "api" };
  return JSON.stringify({
    ...c,
    state,
    images: [...c.images, { repository: "myorg/sidecar", targets: [sidecar] }],
  });
};

const ARGS: CliArgs = {
  command: "tick",
  help: false,
  dryRun: false,
  json: false,
  config: "/virtual/config.json",
  kubeconfig: "/virtual/kubeconfig",
  images: [],
};

export interface InProcessWorld {
  api: SimApiServer;
  registry: SimRegistry;
  /** Current digest of each repository's `stable` tag. */
  current: Record<string, string>;
  lines: string[];
  reset(): void;
  /** One tick; `adjust` may replace parts of its context (e.g. a resolver that throws). */
  tick(
    adjust?: (ctx: TickContext) => TickContext,
  ): Promise<{ result: TickResult; ms: number; budgetMs: number }>;
  /**
   * Someone else changes a container's image over the API, as `kubectl set image` does: a
   * strategic merge patch with that writer's `fieldManager`. Its HTTP status.
   */
  setImage(w: WorkloadSpec, container: string, image: string, manager: string): Promise<number>;
  /** `image-refresh rearm [IMAGE...]`; its exit code. */
  rearm(images?: string[]): Promise<number>;
  /** The legacy `state` workload's annotations. */
  annotations(): Record<string, string>;
  /** Sets (null: removes) annotations of the legacy `state` workload, as an earlier version left them. */
  setLegacy(a: Record<string, string | null>): void;
  /** The store's data (empty while there is no store). */
  book(): Record<string, string>;
  /** Edits the store's data as a human with `kubectl edit` would (null removes a key). */
  setBook(data: Record<string, string | null>): void;
  stop(): Promise<void>;
}

export async function startInProcessWorld(): Promise<InProcessWorld> {
  const tls = generateTls();
  const api = await startApiServer({ tls, stepMs: 2 });
  const registry = await startRegistry({ tls });
  const files: Record<string, string> = {
    "/virtual/config.json": config(registry.host),
    "/virtual/kubeconfig": api.kubeconfig(),
  };
  const readFile = (p: string) => {
    const text = files[p];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
    return text;
  };
  const lines: string[] = [];
  const log = createLogger({ format: "text", write: (l) => void lines.push(l) });
  const runtime = () =>
    createRuntime(ARGS, { env: {}, readFile, log, telemetry: noopTelemetry(), registryCa: tls.caPem });
  const current: Record<string, string> = {};
  const world: InProcessWorld = {
    api,
    registry,
    current,
    lines,
    reset() {
      api.faults.clear();
      registry.faults.clear();
      api.ensureNamespace(STORE[0]);
      api.putConfigMap(...STORE, null);
      current.api = registry.push("myorg/api", "stable");
      current["node-agent"] = registry.push("myorg/node-agent", "stable", { multiArch: true });
      current.sidecar = registry.push("myorg/sidecar", "stable");
      // As seedScenario's `pinned` does: an installation in sync, each container on the build the
      // registry serves, named by the registry's host (the verdict compares repository and digest).
      const key = (container: string) =>
        IMAGE_KEYS.find((k) => TARGETS[k]?.some((t) => t.container === container)) as string;
      for (const w of WORKLOADS) {
        if (api.getObject(w.kind, w.namespace, w.name)) api.deleteObject(w.kind, w.namespace, w.name);
        api.addWorkload({
          kind: w.kind,
          namespace: w.namespace,
          name: w.name,
          replicas: w.replicas,
          containers: w.containers.map((name) => ({
            name,
            image: `${registry.host}/myorg/${key(name)}@${current[key(name)]}`,
          })),
        });
      }
      api.clearLog();
      registry.clearLog();
      lines.length = 0;
    },
    async tick(adjust = (ctx: TickContext) => ctx) {
      const rt = await runtime();
      // As `image-refresh tick` does: the tick's own deadline aborts everything still running.
      const budgetMs = tickBudgetMs(rt.config);
      const timer = setTimeout(() => rt.controller.abort(new Error("past the deadline")), budgetMs);
      const started = performance.now();
      try {
        const result = await runTick(adjust(rt.tickContext(false)));
        return { result, ms: performance.now() - started, budgetMs };
      } finally {
        clearTimeout(timer);
      }
    },
    async setImage(w, container, image, manager) {
      const path = `${objectPath(w.kind, w.namespace, w.name)}?fieldManager=${manager}`;
      const body = { spec: { template: { spec: { containers: [{ name: container, image }] } } } };
      return (await patch(api, path, "application/strategic-merge-patch+json", body)).status;
    },
    async rearm(images: string[] = []) {
      return rearmCommand(await runtime(), false, images);
    },
    annotations() {
      return api.getObject("Deployment", "apps", "api")?.metadata.annotations ?? {};
    },
    setLegacy(a) {
      api.setAnnotations("Deployment", "apps", "api", a);
    },
    book() {
      return { ...(api.getConfigMap(...STORE)?.data ?? {}) };
    },
    setBook(data) {
      const next = world.book();
      for (const [name, v] of Object.entries(data)) {
        if (v === null) delete next[name];
        else next[name] = v;
      }
      api.putConfigMap(...STORE, next);
    },
    stop: async () => {
      await Promise.all([api.stop(), registry.stop()]);
    },
  };
  return world;
}

/**
 * A fault for the n-th request (counted from when it is added) of a method, on any path. The
 * simulators' rules match a path by a string or a RegExp's `test`; this stands in for a RegExp
 * whose `test` counts requests instead. `matches` tries the path alone before path + query, so
 * counting only query-less calls counts every request exactly once.
 */
export function nthRequestFault(method: string | undefined, nth: number, fault: Fault): FaultRule {
  let seen = 0;
  const counter = {
    lastIndex: 0,
    test(s: string) {
      if (s.includes("?")) return false;
      seen += 1;
      return seen === nth;
    },
  };
  return { method, path: counter as unknown as RegExp, times: 1, fault };
}
