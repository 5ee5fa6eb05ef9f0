// The three clients the bench compares, each run as a fresh process against a BenchWorld: the
// compiled product, the limit script, and the kubectl way (bash + kubectl + curl).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LimitPlan } from "./limit.ts";
import { type Spawned, timed } from "./measure.ts";
import { type BenchWorld, PREFIX, SERVICE, STATE, TAG } from "./world.ts";

export const BINARY = join(import.meta.dir, "..", "dist", "image-refresh");
export const KUBECTL_WAY = join(import.meta.dir, "kubectl-way.sh");
export const KUBECTL_READS = join(import.meta.dir, "kubectl-reads.sh");
export const LIMIT_SOURCE = join(import.meta.dir, "limit.ts");

export function runProduct(
  w: BenchWorld,
  args: string[] = ["tick"],
  env: Record<string, string> = {},
  wrap: string[] = [],
  configPath = w.configPath,
): Promise<Spawned> {
  const cmd = [...wrap, BINARY, ...args, "--config", configPath, "--kubeconfig", w.kubeconfigPath];
  return timed(cmd, w.env(env));
}

/** The outcome of a tick: the `outcome=` field of its outcome line (telemetry warnings may follow it). */
export function outcomeOf(r: Spawned): string | undefined {
  return [...r.stderr.matchAll(/ outcome=([a-z_]+)/g)].at(-1)?.[1];
}

/** Writes the limit script's plan for this world and returns its path. */
export function limitPlan(w: BenchWorld): string {
  const token = new URL(`${w.registry.url}/token`);
  token.searchParams.set("service", SERVICE);
  for (const img of w.images) token.searchParams.append("scope", `repository:${img.repository}:pull`);
  const plan: LimitPlan = {
    apiUrl: w.apiUrl,
    apiToken: w.api.token,
    // The kubeconfig names the world's one CA, which signs the registry's certificate too.
    apiCa: readFileSync(w.caPath, "utf8"),
    storePath: w.storePath,
    tokenUrl: token.href,
    registryUrl: w.registry.url,
    tag: TAG,
    prefix: PREFIX,
    images: w.images.map((i) => ({ key: i.key, repository: i.repository })),
    workloads: w.workloads.map((x) => ({ path: x.path, containers: x.containers })),
  };
  const path = join(w.dir, "limit-plan.json");
  writeFileSync(path, JSON.stringify(plan));
  return path;
}

/** `limit` is the command that runs bench/limit.ts: a compiled binary, or [bun, limit.ts]. */
export function runLimit(w: BenchWorld, limit: string[], env: Record<string, string> = {}): Promise<Spawned> {
  return timed([...limit, limitPlan(w)], w.env(env));
}

export function runKubectlWay(w: BenchWorld): Promise<Spawned> {
  // A new pod has an empty discovery cache; a shared one would hide kubectl's discovery requests.
  const cache = mkdtempSync(join(w.dir, "kube-cache-"));
  const env = w.env({
    KUBECONFIG: w.kubeconfigPath,
    CACHE_DIR: cache,
    NAMESPACE: STATE.namespace,
    STATE: `deployment/${STATE.name}`,
    PREFIX,
    REGISTRY: w.registry.url,
    SERVICE,
    CA: w.caPath,
    TAG,
    TARGETS: w.images
      .flatMap((i) =>
        i.targets.map((t) => `${i.key} ${t.namespace} ${t.kind.toLowerCase()}/${t.name} ${t.container}`),
      )
      .join("\n"),
  });
  return timed(["bash", KUBECTL_WAY, ...w.images.map((i) => `${i.key}=${i.repository}`)], env);
}

/**
 * The product's reads as the kubectl-reads script takes them, from the requests one run of it
 * made (call after a product run, before clearLogs): an API GET becomes `kubectl NAMESPACE
 * RESOURCE/NAME`, a registry request `curl METHOD PATH?QUERY`, in the order they arrived.
 */
export function productReads(w: BenchWorld): string {
  const api = w.api.log.map((e) => ({ at: e.start, line: kubectlRead(e.method, e.path) }));
  const registry = w.registry.log.map((e) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(e.query)) for (const x of [v].flat()) q.append(k, x);
    return { at: e.start, line: `curl ${e.method} ${e.path}${q.size ? `?${q}` : ""}` };
  });
  // A stable sort: API reads first when both arrived in the same millisecond.
  return [...api, ...registry]
    .sort((a, b) => a.at - b.at)
    .map((r) => r.line)
    .join("\n");
}

const OBJECT_PATH = /^\/(?:api|apis\/[^/]+)\/v1\/namespaces\/([^/]+)\/([a-z]+)\/([^/]+)$/;

function kubectlRead(method: string, path: string): string {
  const m = OBJECT_PATH.exec(path);
  if (method !== "GET" || !m)
    throw new Error(`Cannot read ${method} ${path} the kubectl way: not a GET of one object`);
  return `kubectl ${m[1]} ${m[2]}/${m[3]}`;
}

/** The product's reads (from productReads) done by one kubectl per API read and one curl per registry request. */
export function runKubectlReads(w: BenchWorld, reads: string): Promise<Spawned> {
  const env = w.env({
    KUBECONFIG: w.kubeconfigPath,
    CACHE_DIR: mkdtempSync(join(w.dir, "kube-cache-")),
    CA: w.caPath,
    REGISTRY: w.registry.url,
    PREFIX,
    READS: reads,
    TARGETS: w.images
      .flatMap((i) =>
        i.targets.map((t) => `${i.key} ${t.namespace} ${plural(t.kind)}/${t.name} ${t.container}`),
      )
      .join("\n"),
  });
  return timed(["bash", KUBECTL_READS, ...w.images.map((i) => `${i.key}=${i.repository}`)], env);
}

const plural = (kind: string) => (kind === "Deployment" ? "deployments" : "daemonsets");

/** The flags of `npm run build` (e.g. --minify, --bytecode), so bench scripts compile like the product. */
export function productBuildFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(import.meta.dir, "..", "package.json"), "utf8"));
  const words: string[] = String(pkg.scripts.build).split(/\s+/);
  return words.filter((w, i) => w.startsWith("--") && w !== "--outfile" && words[i - 1] !== "--outfile");
}

/** Compiles a bench script the way the product is compiled, so both pay the same start-up. */
export async function compile(source: string, out: string): Promise<string[]> {
  const flags = productBuildFlags();
  if (!flags.includes("--compile")) flags.push("--compile");
  const r = await timed([process.execPath, "build", source, ...flags, "--outfile", out], {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/tmp",
  });
  if (r.code !== 0) throw new Error(`Cannot compile ${source}: ${r.stderr}`);
  return [out];
}
