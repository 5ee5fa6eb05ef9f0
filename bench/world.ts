// The simulated installation the bench measures: an API server and a bearer-token registry over
// HTTPS with one CA made for this run, `targets` workloads following `repos` repositories, and
// the files the binary, the limit script and the kubectl way read. Built here rather than from
// tests/support/world.ts because the bench needs its own shapes (3 images / 4 targets, up to 200 targets).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SimApiServer, startApiServer } from "../sim/apiserver/index.ts";
import { type SimRegistry, startRegistry } from "../sim/registry.ts";
import { type Relay, startRelay } from "../sim/tcp-relay.ts";
import { generateTls, type TlsMaterial } from "../sim/tls.ts";

export const PREFIX = "image-refresh.io";
export const TAG = "stable";
export const STATE = { kind: "Deployment", namespace: "apps", name: "api" } as const;
export const STATE_PATH = "/apis/apps/v1/namespaces/apps/deployments/api";
/** image-refresh's own ConfigMap, where a tick keeps its bookkeeping. */
export const STORE = { namespace: "image-refresh", name: "image-refresh-state" } as const;
export const STORE_PATH = `/api/v1/namespaces/${STORE.namespace}/configmaps/${STORE.name}`;
/** The simulated registry's token service name (sim/registry.ts). */
export const SERVICE = "sim-registry";

export interface Image {
  repository: string;
  key: string;
  targets: Array<{ kind: "Deployment" | "DaemonSet"; namespace: string; name: string; container: string }>;
}

export interface Workload {
  kind: "Deployment" | "DaemonSet";
  namespace: string;
  name: string;
  /** The API path a GET of it reads. */
  path: string;
  /** Its target containers: name and the image key each follows. */
  containers: Array<{ name: string; key: string }>;
}

/** The distinct target workloads of `images`, each once, in the order they first appear. */
export function distinctWorkloads(images: Image[]): Workload[] {
  const out = new Map<string, Workload>();
  for (const img of images)
    for (const t of img.targets) {
      const plural = t.kind === "Deployment" ? "deployments" : "daemonsets";
      const path = `/apis/apps/v1/namespaces/${t.namespace}/${plural}/${t.name}`;
      const w = out.get(path) ?? { kind: t.kind, namespace: t.namespace, name: t.name, path, containers: [] };
      w.containers.push({ name: t.container, key: img.key });
      out.set(path, w);
    }
  return [...out.values()];
}

export interface BenchWorld {
  api: SimApiServer;
  registry: SimRegistry;
  dir: string;
  caPath: string;
  kubeconfigPath: string;
  configPath: string;
  /** The same configuration with `registry.token` set, so the product skips the challenge probe. */
  tokenConfigPath: string;
  images: Image[];
  /**
   * What the limit reads as the store: the ConfigMap when the product keeps its bookkeeping
   * there, else the legacy state workload, the same one GET of one object.
   */
  storePath: string;
  /** Every distinct target workload once, in config order (the state object too when it is one). */
  workloads: Workload[];
  /** Environment shared by every client under test: the CA, and nothing from the caller. */
  env(extra?: Record<string, string>): Record<string, string>;
  clearLogs(): void;
  /** Requests the sims saw since the last clearLogs. */
  counts(): { api: number; registry: number };
  /** "API|registry METHOD path" of every request since the last clearLogs. */
  requests(): string[];
  /** Epoch ms of the first request either sim saw since the last clearLogs. */
  firstRequestAt(): number | undefined;
  /** The API server's address as clients are given it (the relay's, with `relay`). */
  apiUrl: string;
  /**
   * With `relay`: epoch ms of the first TCP connection to the API server since the last
   * clearLogs, when the client first reached for the cluster (before any TLS byte).
   */
  firstConnectionAt(): number | undefined;
  /** TCP connections accepted since the last clearLogs by each relay asked for (undefined without). */
  connections(): { api?: number; registry?: number };
  /** Pushes a new build of every repository, so the next tick must refresh. */
  pushAll(): void;
  /**
   * Copies the store's recorded digests onto the state workload's annotations, where the shell
   * job kept them, so the shell-shaped kubectl way reads the same bookkeeping. Without the store
   * the product wrote them there itself, and this does nothing.
   */
  mirrorToState(): Promise<void>;
  stop(): Promise<void>;
}

/** The configuration example's no-op: 3 images, 4 targets (one of them the state object itself). */
function standardImages(): Image[] {
  return [
    {
      repository: "myorg/api",
      key: "api",
      targets: [
        { kind: "Deployment", namespace: "apps", name: "api", container: "api" },
        { kind: "Deployment", namespace: "apps", name: "api-proxy", container: "proxy" },
      ],
    },
    {
      repository: "myorg/node-agent",
      key: "node-agent",
      targets: [{ kind: "DaemonSet", namespace: "agents", name: "node-agent", container: "agent" }],
    },
    {
      repository: "myorg/worker",
      key: "worker",
      targets: [{ kind: "Deployment", namespace: "apps", name: "worker", container: "worker" }],
    },
  ];
}

/** `targets` one-container Deployments spread round-robin over min(targets, maxRepos) repositories. */
function scaledImages(targets: number, maxRepos: number): Image[] {
  const repos = Math.min(targets, maxRepos);
  const images: Image[] = Array.from({ length: repos }, (_, i) => ({
    repository: `myorg/svc-${i}`,
    key: `svc-${i}`,
    targets: [],
  }));
  for (let t = 0; t < targets; t++)
    images[t % repos]?.targets.push({
      kind: "Deployment",
      namespace: "apps",
      name: `w-${t}`,
      container: "app",
    });
  return images;
}

export interface WorldOptions {
  /** Omitted: the standard 3 images / 4 targets. */
  scale?: { targets: number; maxRepos: number };
  /** Controller step of the simulated API server; small makes healthy rollouts quick. */
  stepMs?: number;
  tls?: TlsMaterial;
  /** Puts a TCP relay in front of the API server that times each client's first connection. */
  relay?: boolean;
  /**
   * Puts a TCP relay in front of the registry's API (config's registry.endpoint), counting the
   * connections a tick opens to it; the token endpoint its challenge names stays direct.
   */
  registryRelay?: boolean;
}

export async function startBenchWorld(opts: WorldOptions = {}): Promise<BenchWorld> {
  const tls = opts.tls ?? generateTls();
  const api = await startApiServer({ tls, stepMs: opts.stepMs ?? 2 });
  const registry = await startRegistry({ tls });
  const images = opts.scale ? scaledImages(opts.scale.targets, opts.scale.maxRepos) : standardImages();
  const served = new Map(
    images.map((img) => [
      img.repository,
      registry.push(img.repository, TAG, { multiArch: img.key === "node-agent" }),
    ]),
  );
  // Pinned to the builds the registry serves, as image-refresh leaves an installation in sync:
  // every later tick is a no-op (on the floating tag the tick after the first would re-pin).
  addWorkloads(api, images, (repo) => `${registry.host}/${repo}@${served.get(repo)}`);
  const relay: Relay | undefined = opts.relay
    ? startRelay({ hostname: "127.0.0.1", port: Number(new URL(api.url).port) })
    : undefined;
  const apiUrl = relay?.url ?? api.url;
  const [registryHost, registryPort] = registry.host.split(":") as [string, string];
  const registryRelay: Relay | undefined = opts.registryRelay
    ? startRelay({ hostname: registryHost, port: Number(registryPort) })
    : undefined;
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-bench-"));
  const caPath = join(dir, "ca.pem");
  const kubeconfigPath = join(dir, "kubeconfig");
  const configPath = join(dir, "config.json");
  writeFileSync(caPath, tls.caPem);
  writeFileSync(kubeconfigPath, api.kubeconfig({ server: apiUrl }));
  const model = configModel();
  // With `state` legacy, the tick keeps its bookkeeping in the store (a ConfigMap); its
  // namespace exists, as the install makes it, and the first tick creates the ConfigMap.
  const store = model.storeKey && !model.stateRequired;
  if (store) (api as unknown as { ensureNamespace(ns: string): void }).ensureNamespace(STORE.namespace);
  const config = configFor(registry.host, images, model);
  if (registryRelay) config.registry.endpoint = registryRelay.url;
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  // The same, with the token endpoint configured: no challenge probe (docs/registries.md, registry.token).
  const tokenConfigPath = join(dir, "config-token.json");
  const withToken = configFor(registry.host, images, model);
  withToken.registry = { host: registry.host, token: { realm: `${registry.url}/token`, service: SERVICE } };
  writeFileSync(tokenConfigPath, JSON.stringify(withToken, null, 2));
  return {
    api,
    registry,
    dir,
    caPath,
    kubeconfigPath,
    configPath,
    tokenConfigPath,
    images,
    apiUrl,
    storePath: store ? STORE_PATH : STATE_PATH,
    workloads: distinctWorkloads(images),
    env: (extra = {}) => ({
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      NODE_EXTRA_CA_CERTS: caPath,
      ...extra,
    }),
    clearLogs() {
      api.clearLog();
      registry.clearLog();
      relay?.clear();
      registryRelay?.clear();
    },
    counts: () => ({ api: api.log.length, registry: registry.log.length }),
    requests: () => [
      ...api.log.map((e) => `API ${e.method} ${e.path}`),
      ...registry.log.map((e) => `registry ${e.method} ${e.path}`),
    ],
    firstRequestAt() {
      const starts = [api.log[0]?.start, registry.log[0]?.start].filter((t) => t !== undefined);
      return starts.length ? Math.min(...starts) : undefined;
    },
    firstConnectionAt: () => relay?.connections[0]?.accepted,
    connections: () => ({
      api: relay?.connections.length,
      registry: registryRelay?.connections.length,
    }),
    pushAll() {
      for (const img of images) registry.push(img.repository, TAG, { multiArch: img.key === "node-agent" });
    },
    async mirrorToState() {
      if (!store) return;
      const data: Record<string, string> =
        (
          api as unknown as {
            getConfigMap(ns: string, n: string): { data?: Record<string, string> } | undefined;
          }
        ).getConfigMap(STORE.namespace, STORE.name)?.data ?? {};
      const annotations: Record<string, string> = {};
      for (const [k, v] of Object.entries(data))
        if (/^last-refreshed-.+-digest$/.test(k)) annotations[`${PREFIX}/${k}`] = v;
      api.setAnnotations(STATE.kind, STATE.namespace, STATE.name, annotations);
      // An annotation write moves the Deployment's generation: wait until its controller saw it,
      // so that the ticks measured next find it settled.
      for (let i = 0; i < 200; i++) {
        const o = api.getObject(STATE.kind, STATE.namespace, STATE.name);
        if ((o?.status?.observedGeneration ?? 0) >= (o?.metadata?.generation ?? 0)) return;
        await Bun.sleep(10);
      }
      throw new Error("Cannot prepare the bench world: the state workload never observed its annotations");
    },
    async stop() {
      relay?.stop();
      registryRelay?.stop();
      await Promise.all([api.stop(), registry.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function addWorkloads(api: SimApiServer, images: Image[], ref: (repository: string) => string): void {
  // The state object always exists; in the standard shape it is also a target.
  const containers = new Map<string, { kind: Image["targets"][0]["kind"]; c: Map<string, string> }>();
  containers.set(`Deployment/apps/api`, { kind: "Deployment", c: new Map([["sidecar", "envoy:1"]]) });
  for (const img of images)
    for (const t of img.targets) {
      const id = `${t.kind}/${t.namespace}/${t.name}`;
      const entry = containers.get(id) ?? { kind: t.kind, c: new Map() };
      entry.c.set(t.container, ref(img.repository));
      containers.set(id, entry);
    }
  for (const [id, { kind, c }] of containers) {
    const [, namespace, name] = id.split("/") as [string, string, string];
    api.addWorkload({
      kind,
      namespace,
      name,
      replicas: 2,
      containers: [...c].map(([n, image]) => ({ name: n, image })),
    });
  }
}

/**
 * What the binary's config takes, from its own JSON Schema: `store` (where its bookkeeping
 * lives) and whether `state` is still required (the tick keeps its bookkeeping on that workload)
 * or legacy. Read from `image-refresh schema`, so that the bench fits the binary it measures.
 */
export function configModel(binary = BINARY): {
  storeKey: boolean;
  stateRequired: boolean;
  verifyFor: boolean;
} {
  const r = Bun.spawnSync([binary, "schema"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`Cannot read ${binary} schema: ${r.stderr.toString()}`);
  const schema = JSON.parse(r.stdout.toString()) as { properties: object; required?: string[] };
  return {
    storeKey: "store" in schema.properties,
    stateRequired: !!schema.required?.includes("state"),
    verifyFor: "verifyFor" in schema.properties,
  };
}

const BINARY = join(import.meta.dir, "..", "dist", "image-refresh");

function configFor(host: string, images: Image[], model: ReturnType<typeof configModel>) {
  return {
    tag: TAG,
    registry: { host } as {
      host: string;
      endpoint?: string;
      token?: { realm: string; service: string };
    },
    // Named outside a pod, where the store's namespace cannot default to the pod's.
    ...(model.storeKey ? { store: STORE } : {}),
    // With the store, an installation keeps nothing on a workload: no legacy state object.
    ...(model.stateRequired ? { state: STATE } : {}),
    annotationPrefix: PREFIX,
    maxRefreshAttempts: 3,
    maxSkipTicks: 8,
    rolloutTimeout: "30s",
    requestTimeout: "10s",
    // The instant judgement, as binaries before the verification window made it: a refresh's
    // figures stay comparable across commits (a window adds the same verifyFor to every rollout).
    ...(model.verifyFor ? { verifyFor: "0s" } : {}),
    images: images.map((i) => ({ repository: i.repository, key: i.key, targets: i.targets })),
  };
}
