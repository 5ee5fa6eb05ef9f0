// A simulated world for end-to-end tests: API server and registry over HTTPS with one CA made
// for this run, three workloads following two repositories, and the files the binary reads.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WorkloadKind } from "../../lib/workload.ts";
import { settled } from "../../sim/apiserver/driver.ts";
import { type AddWorkload, type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { scenarioConfig, seedScenario } from "../../sim/scenario.ts";
import { generateTls } from "../../sim/tls.ts";
import { type RunResult, runBinary } from "./binary.ts";

export const PREFIX = "image-refresh.io";
/** `image-refresh.io/<name>`: a store key as `World.ours()` names it. */
export const storeKey = (name: string) => `${PREFIX}/${name}`;
export const STATE = ["Deployment", "apps", "api"] as const;
/** The store: image-refresh's own ConfigMap, where the scenario's config keeps the bookkeeping. */
export const STORE = ["image-refresh", "image-refresh-state"] as const;
export const STORE_PATH = "/api/v1/namespaces/image-refresh/configmaps/image-refresh-state";

export interface World {
  api: SimApiServer;
  registry: SimRegistry;
  dir: string;
  configPath: string;
  kubeconfigPath: string;
  caPath: string;
  /** Rewrites config.yaml; `tweak` edits the default config object. */
  writeConfig(tweak?: (c: any) => void): void;
  run(args?: string[], env?: Record<string, string>): Promise<RunResult>;
  /** The annotations of Deployment apps/api (the legacy state object of the migration tests). */
  annotations(): Record<string, string>;
  /** The store's data: image-refresh's bookkeeping. */
  book(): Record<string, string>;
  /** The store's data named as the legacy annotations were (`<prefix>/<key>`), for tests written so. */
  ours(): Record<string, string>;
  /** Edits the store's data as a human with `kubectl edit` would (null removes a key; a `<prefix>/` is dropped). */
  setBook(data: Record<string, string | null>): void;
  image(
    kind: "Deployment" | "DaemonSet" | "StatefulSet",
    ns: string,
    name: string,
    container: string,
  ): string;
  stop(): Promise<void>;
}

export function defaultConfig(registryHost: string): any {
  return scenarioConfig(registryHost);
}

/** `now`: the API server's clock (its Date headers and managedFields times), for soak tests. */
export async function startWorld(opts: { now?: () => Date } = {}): Promise<World> {
  const tls = generateTls();
  const api = await startApiServer({ tls, stepMs: 5, ...(opts.now ? { now: opts.now } : {}) });
  const registry = await startRegistry({ tls });
  seedScenario(api, registry);
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-e2e-"));
  const configPath = join(dir, "config.json");
  const kubeconfigPath = join(dir, "kubeconfig");
  const caPath = join(dir, "ca.pem");
  writeFileSync(kubeconfigPath, api.kubeconfig());
  writeFileSync(caPath, tls.caPem);
  const world: World = {
    api,
    registry,
    dir,
    configPath,
    kubeconfigPath,
    caPath,
    writeConfig(tweak = () => {}) {
      const c = defaultConfig(registry.host);
      tweak(c);
      writeFileSync(configPath, JSON.stringify(c, null, 2));
    },
    run(args = [], env = {}) {
      const given = args.length ? args : ["tick"];
      const files = [
        ...(given.includes("--config") ? [] : ["--config", configPath]),
        ...(given.includes("--kubeconfig") ? [] : ["--kubeconfig", kubeconfigPath]),
      ];
      return runBinary([...given, ...files], { env: { NODE_EXTRA_CA_CERTS: caPath, ...env } });
    },
    annotations() {
      return api.getObject(...STATE).metadata.annotations ?? {};
    },
    book() {
      return api.getConfigMap(...STORE)?.data ?? {};
    },
    setBook(data) {
      const next: Record<string, string> = { ...world.book() };
      for (const [name, v] of Object.entries(data)) {
        const k = name.startsWith(`${PREFIX}/`) ? name.slice(PREFIX.length + 1) : name;
        if (v === null) delete next[k];
        else next[k] = v;
      }
      api.putConfigMap(...STORE, next);
    },
    ours() {
      return Object.fromEntries(Object.entries(world.book()).map(([k, v]) => [`${PREFIX}/${k}`, v]));
    },
    image(kind, ns, name, container) {
      const spec = api.getObject(kind, ns, name).spec.template.spec;
      return [...spec.containers, ...(spec.initContainers ?? [])].find((c: any) => c.name === container)
        .image;
    },
    async stop() {
      await Promise.all([api.stop(), registry.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  world.writeConfig();
  return world;
}

type TargetKind = "Deployment" | "DaemonSet";
/** The scenario's targets per image key (sim/scenario.ts): what a recorded digest vouches for. */
export const SCENARIO_TARGETS: Record<
  string,
  { repository: string; targets: Array<{ kind: TargetKind; ns: string; name: string; container: string }> }
> = {
  api: {
    repository: "myorg/api",
    targets: [
      { kind: "Deployment", ns: "apps", name: "api", container: "api" },
      { kind: "Deployment", ns: "apps", name: "api-proxy", container: "proxy" },
    ],
  },
  "node-agent": {
    repository: "myorg/node-agent",
    targets: [{ kind: "DaemonSet", ns: "agents", name: "node-agent", container: "agent" }],
  },
};

/**
 * Pins every target of the given images to the given digests as image-refresh would have (its
 * field manager owns the image field), then waits until those rollouts settle, so a test that
 * records a digest by hand starts from the world an earlier refresh to it would have left.
 * Without it the containers stay on the seed's pin, which the verdict reads as a human's pin.
 */
export function pinTargets(w: World, digests: Record<string, string>): Promise<void> {
  const refs = Object.entries(digests).map(([key, digest]) => [key, `@${digest}`] as const);
  return setTargets(w, Object.fromEntries(refs), "image-refresh");
}

/**
 * Puts every target of the given images on the floating tag, as a deploy tool (`helm` unless
 * named) renders it: an installation image-refresh has not pinned yet, or a re-render over a pin.
 * `host` names another registry than the world's, for a test that configures one.
 */
export function floatTargets(
  w: World,
  keys: string[],
  opts: { manager?: string; host?: string } = {},
): Promise<void> {
  const suffixes = Object.fromEntries(keys.map((key) => [key, ":stable"]));
  return setTargets(w, suffixes, opts.manager ?? "helm", opts.host);
}

/** Sets each image's targets to `<host>/<repository><suffix>` as `manager`; waits for the rollouts. */
async function setTargets(
  w: World,
  suffixes: Record<string, string>,
  manager: string,
  host = w.registry.host,
): Promise<void> {
  const all = Object.keys(suffixes).flatMap((key) => {
    const img = SCENARIO_TARGETS[key];
    if (!img) throw new Error(`Cannot set the targets of ${key}: not an image of the scenario`);
    return img.targets.map((t) => ({ ...t, ref: `${host}/${img.repository}${suffixes[key]}` }));
  });
  for (const t of all) w.api.setImage(t.kind, t.ns, t.name, t.container, t.ref, { manager });
  await waitSettled(w, all, "Cannot set the targets' images");
}

/**
 * Waits until every workload reads settled: the simulated controller takes a few steps to get
 * there, and a tick that reads one meanwhile (its process started before the test's timers ran,
 * on a busy machine) rightly finds it unsettled. `what` begins the error after 5 s.
 */
export async function waitSettled(
  w: World,
  workloads: ReadonlyArray<{ kind: WorkloadKind; ns: string; name: string }>,
  what: string,
): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!workloads.every((t) => settled(w.api.getObject(t.kind, t.ns, t.name)))) {
    if (Date.now() > deadline) throw new Error(`${what}: the rollouts did not settle in 5 s`);
    await Bun.sleep(5);
  }
}

/** Puts `workload` in the place of the seeded object of the same kind, namespace and name. */
export function replaceWorkload(w: World, workload: AddWorkload): void {
  w.api.deleteObject(workload.kind, workload.namespace, workload.name);
  w.api.addWorkload(workload);
}

/**
 * node-agent also runs in Deployment api-proxy, as container `agent` beside `proxy`, in the
 * cluster and in the config: the two images share a workload.
 */
export function shareApiProxy(w: World, images: { proxy: string; agent: string }): void {
  replaceWorkload(w, {
    kind: "Deployment",
    namespace: "apps",
    name: "api-proxy",
    replicas: 2,
    containers: [
      { name: "proxy", image: images.proxy },
      { name: "agent", image: images.agent },
    ],
  });
  w.writeConfig((c) =>
    c.images[1].targets.push({ kind: "Deployment", name: "api-proxy", container: "agent" }),
  );
}

/** Runs the first-observation tick so later ticks have digests to compare; clears the logs. */
export async function recorded(w: World): Promise<void> {
  const r = await w.run();
  if (r.code !== 0) throw new Error(`Cannot record the first observation: exit ${r.code}\n${r.stderr}`);
  w.api.clearLog();
  w.registry.clearLog();
}

/** The writes (non-GET requests) the API server saw, as "METHOD path". */
export function writes(api: SimApiServer): string[] {
  return api.log.filter((e) => e.method !== "GET").map((e) => `${e.method} ${e.path}`);
}

export const STATE_PATH = "/apis/apps/v1/namespaces/apps/deployments/api";
/**
 * A tick's first round: the store and every distinct target workload of the scenario, once
 * each, concurrently (so in no fixed order): sorted, as "GET path".
 */
export const TARGET_READS = [
  "GET /api/v1/namespaces/image-refresh/configmaps/image-refresh-state",
  "GET /apis/apps/v1/namespaces/agents/daemonsets/node-agent",
  "GET /apis/apps/v1/namespaces/apps/deployments/api",
  "GET /apis/apps/v1/namespaces/apps/deployments/api-proxy",
];

/** The API requests of a tick as "METHOD path", the concurrent first round sorted. */
export function apiRequests(api: SimApiServer): string[] {
  const all = api.log.map((e) => `${e.method} ${e.path}`);
  const reads = all.slice(0, TARGET_READS.length);
  if (reads.every((x) => TARGET_READS.includes(x))) reads.sort();
  return [...reads, ...all.slice(TARGET_READS.length)];
}

/** writeStory of a tick that refreshes api alone: both its Deployments re-imaged and settled. */
export const API_REFRESH_STORY = [
  "attempt api=1",
  "image api",
  "image api-proxy",
  "clear attempt api",
  "record api",
  // One Event about each workload the refresh concerns.
  "event Refreshed",
  "event Refreshed",
];

/**
 * The successful writes of a tick, named by what they did: the story the rules prescribe, without
 * the noise of a retried conflict. A store write that carries several things names each:
 * `attempt api=1`, `flap marker node-agent`, `unresolved node-agent=2`, `record api`.
 */
export function writeStory(api: SimApiServer): string[] {
  return api.log
    .filter((e) => e.method !== "GET" && e.status < 300)
    .map((e) => {
      if (e.path.endsWith("/events")) return `event ${JSON.parse(e.body ?? "{}").reason}`;
      if (e.contentType?.startsWith("application/json-patch+json")) return `image ${e.path.split("/").pop()}`;
      const body = JSON.parse(e.body ?? "{}");
      if (e.path.includes("/configmaps")) return describeData(body.data ?? {}, e.method === "POST");
      return `annotations ${Object.keys(body.metadata?.annotations ?? {}).join(",")}`;
    });
}

function describeData(a: Record<string, string | null>, created: boolean): string {
  const parts: string[] = created ? ["create"] : [];
  const each = (re: RegExp, say: (key: string, v: string | null) => string | undefined) => {
    for (const [k, v] of Object.entries(a)) {
      const m = re.exec(k);
      if (m) {
        const said = say(m[1] as string, v);
        if (said) parts.push(said);
      }
    }
  };
  each(/^skip-streak-(.+)$/, (k, v) => (v === null ? `clear streak ${k}` : `streak ${k}=${v}`));
  each(/^refresh-attempt-(?!traceparent-)(.+)$/, (k, v) =>
    v === null ? `clear attempt ${k}` : `attempt ${k}=${v}`,
  );
  each(/^refresh-flap-detected-(.+)$/, (k, v) =>
    v === null ? `clear flap marker ${k}` : `flap marker ${k}`,
  );
  each(/^unresolved-streak-(.+)$/, (k, v) => (v === null ? `clear unresolved ${k}` : `unresolved ${k}=${v}`));
  each(/^rejected-(.+)-digest$/, (k, v) => (v === null ? `clear rejected ${k}` : `rejected ${k}`));
  const digests = Object.keys(a)
    .filter((k) => k.startsWith("last-refreshed-"))
    .map((k) => k.replace("last-refreshed-", "").replace(/-digest$/, ""));
  if (digests.length) parts.push(`record ${digests.join(",")}`);
  return parts.join(", ") || `store ${Object.keys(a).join(",")}`;
}
