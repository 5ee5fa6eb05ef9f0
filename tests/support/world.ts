// A simulated world for end-to-end tests: API server and registry over HTTPS with one CA made
// for this run, three workloads following two repositories, and the files the binary reads.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { settled } from "../../sim/apiserver/driver.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { scenarioConfig, seedScenario } from "../../sim/scenario.ts";
import { generateTls } from "../../sim/tls.ts";
import { type RunResult, runBinary } from "./binary.ts";

export const PREFIX = "image-refresh.io";
export const STATE = ["Deployment", "apps", "api"] as const;

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
  annotations(): Record<string, string>;
  ours(): Record<string, string>;
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
    ours() {
      return Object.fromEntries(
        Object.entries(world.annotations()).filter(([k]) => k.startsWith(`${PREFIX}/`)),
      );
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
 * Without it the containers stay on the seed's pin, which SPEC step 6 reads as a human's pin.
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
  const deadline = Date.now() + 5000;
  while (!all.every((t) => settled(w.api.getObject(t.kind, t.ns, t.name)))) {
    if (Date.now() > deadline)
      throw new Error("Cannot set the targets' images: their rollouts did not settle in 5 s");
    await Bun.sleep(5);
  }
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
 * SPEC step 4: after the state object, a settled tick reads every other distinct target workload
 * of the scenario once, concurrently (so in no fixed order): sorted, as "GET path".
 */
export const TARGET_READS = [
  "GET /apis/apps/v1/namespaces/agents/daemonsets/node-agent",
  "GET /apis/apps/v1/namespaces/apps/deployments/api-proxy",
];

/** The API requests of a tick as "METHOD path", the concurrent target reads after the state GET sorted. */
export function apiRequests(api: SimApiServer): string[] {
  const all = api.log.map((e) => `${e.method} ${e.path}`);
  const reads = all.slice(1, 1 + TARGET_READS.length);
  if (all[0] === `GET ${STATE_PATH}` && reads.every((x) => TARGET_READS.includes(x))) reads.sort();
  return [...all.slice(0, 1), ...reads, ...all.slice(1 + TARGET_READS.length)];
}

/**
 * The successful writes of a tick, named by what they did: the story SPEC prescribes, without
 * the noise of a retried conflict. A state write that carries several things names each:
 * `attempt api=1`, `flap marker node-agent`, `unresolved node-agent=2`, `record api`.
 */
export function writeStory(api: SimApiServer, prefix = PREFIX): string[] {
  return api.log
    .filter((e) => e.method !== "GET" && e.status < 300)
    .map((e) => {
      if (e.method === "POST") return `event ${JSON.parse(e.body ?? "{}").reason}`;
      if (e.contentType?.startsWith("application/json-patch+json")) {
        const ops: Array<{ op: string; path: string }> = JSON.parse(e.body ?? "[]");
        const reset = ops.filter(
          (o) =>
            o.op === "remove" && /~1refresh-attempt-[^~]*$/.test(o.path) && !o.path.includes("traceparent"),
        );
        if (reset.length)
          return `reset ${reset.map((o) => o.path.replace(/.*~1refresh-attempt-/, "")).join(",")}`;
        return `image ${e.path.split("/").pop()}`;
      }
      return describeAnnotations(JSON.parse(e.body ?? "{}").metadata?.annotations ?? {}, prefix);
    });
}

function describeAnnotations(a: Record<string, string | null>, prefix: string): string {
  const parts: string[] = [];
  const each = (re: RegExp, say: (key: string, v: string | null) => string | undefined) => {
    for (const [k, v] of Object.entries(a)) {
      const m = re.exec(k.slice(prefix.length + 1));
      if (k.startsWith(`${prefix}/`) && m) {
        const said = say(m[1] as string, v);
        if (said) parts.push(said);
      }
    }
  };
  if (`${prefix}/refresh-skip-streak` in a)
    parts.push(
      a[`${prefix}/refresh-skip-streak`] === null
        ? "clear streak"
        : `streak ${a[`${prefix}/refresh-skip-streak`]}`,
    );
  each(/^refresh-attempt-(?!traceparent-)(.+)$/, (k, v) =>
    v === null ? `clear attempt ${k}` : `attempt ${k}=${v}`,
  );
  each(/^refresh-flap-detected-(.+)$/, (k, v) =>
    v === null ? `clear flap marker ${k}` : `flap marker ${k}`,
  );
  each(/^unresolved-streak-(.+)$/, (k, v) => (v === null ? `clear unresolved ${k}` : `unresolved ${k}=${v}`));
  each(/^rejected-(.+)-digest$/, (k, v) => (v === null ? `clear rejected ${k}` : `rejected ${k}`));
  if (Object.keys(a).some((k) => /\/refresh-(attempt|flap-detected|attempt-traceparent)$/.test(k)))
    parts.push("migrate legacy");
  const digests = Object.keys(a)
    .filter((k) => k.startsWith(`${prefix}/last-refreshed-`))
    .map((k) => k.replace(`${prefix}/last-refreshed-`, "").replace(/-digest$/, ""));
  if (digests.length) parts.push(`record ${digests.join(",")}`);
  return parts.join(", ") || `annotations ${Object.keys(a).join(",")}`;
}
