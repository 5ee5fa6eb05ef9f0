// The real world of section 9: the real tier's control plane (etcd, kube-apiserver and
// kube-controller-manager from peers/kube), the simulated registry over HTTPS signed by the
// cluster's CA (as tests/real/story.ts has it), and Deployments of replicas 0 spread round-robin
// over the images, pinned to the builds the registry serves, as connections.real.test.ts sets
// them up. No fake kubelet: with no replicas there is no pod to tend, and its poll of every pod
// each 150 ms would add to the very CPU the section measures.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../sim/registry.ts";
import { generateTls } from "../sim/tls.ts";
import { expectStatus } from "../tests/real/api.ts";
import { type ControlPlane, startControlPlane } from "../tests/real/control-plane.ts";
import { deployment, namespace } from "../tests/real/manifests.ts";
import { peer } from "../tests/real/peers.ts";
import type { LimitPlan } from "./limit.ts";
import { PREFIX, SERVICE, TAG } from "./world.ts";

export const NS = "fleet";
export const REPOS = 10;
/** Deployments created 20 at a time: the set-up is not measured, only waited for. */
const CREATE_BATCH = 20;

export interface Fleet {
  cp: ControlPlane;
  registry: SimRegistry;
  dir: string;
  /** kube-apiserver's own pid (not its watchdog's nor its `timeout`'s). */
  apiserverPid: number;
  /** Environment of every client: the cluster's CA (which signs the registry's certificate). */
  env: Record<string, string>;
  /**
   * A config, a kubeconfig and a limit plan for the first `workloads` Deployments, with a store
   * of their own; the API server at `apiUrl` (a relay's), by default its own address.
   */
  shape(workloads: number, apiUrl?: string): Shape;
  stop(): Promise<void>;
}

export interface Shape {
  configPath: string;
  kubeconfigPath: string;
  planPath: string;
}

const name = (i: number) => `w-${i}`;
const repo = (i: number) => `svc-${i % REPOS}`;

/** Starts the control plane and the registry and creates `workloads` Deployments; stops what it started on error. */
export async function startFleet(workloads: number): Promise<Fleet> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s();
  };
  try {
    const dir = mkdtempSync(join(tmpdir(), "image-refresh-bench-fleet-"));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    // Only the controllers that settle a Deployment, and the one the control plane's readiness waits for.
    const cp = await startControlPlane({
      hardLimitS: 1800,
      controllers: ["deployment-controller", "replicaset-controller", "serviceaccount-controller"],
    });
    stops.push(() => cp.stop());
    const registry = await startRegistry({
      tls: generateTls({ ca: { certPem: cp.caPem, keyPem: cp.caKeyPem } }),
    });
    stops.push(() => registry.stop());
    const digests = Array.from({ length: REPOS }, (_, r) => registry.push(`${NS}/svc-${r}`, TAG));
    await createDeployments(cp, workloads, (i) => `${registry.host}/${NS}/${repo(i)}@${digests[i % REPOS]}`);
    await allObserved(cp, workloads);
    return {
      cp,
      registry,
      dir,
      apiserverPid: apiserverPid(cp),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, NODE_EXTRA_CA_CERTS: cp.caPath },
      shape: (n, apiUrl) => writeShape({ cp, registry, dir }, n, apiUrl ?? cp.server),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function createDeployments(cp: ControlPlane, n: number, image: (i: number) => string): Promise<void> {
  expectStatus(await cp.admin.request("POST", "/api/v1/namespaces", { body: namespace(NS) }), "create ns");
  for (let at = 0; at < n; at += CREATE_BATCH) {
    const batch = Array.from({ length: Math.min(CREATE_BATCH, n - at) }, (_, k) => at + k);
    await Promise.all(
      batch.map(async (i) => {
        // No replicas: the controllers settle each Deployment without a pod.
        const body = deployment(NS, name(i), {
          containers: [{ name: repo(i), image: image(i) }],
          replicas: 0,
        });
        const r = await cp.admin.request("POST", `/apis/apps/v1/namespaces/${NS}/deployments`, { body });
        expectStatus(r, `create deployment ${NS}/${name(i)}`);
      }),
    );
  }
}

/** Until every Deployment was seen by its controller, so that the ticks find them settled. */
async function allObserved(cp: ControlPlane, n: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const list = (await cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments`)) as {
      items: Array<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>;
    };
    if (
      list.items.length === n &&
      list.items.every((d) => (d.status?.observedGeneration ?? 0) >= d.metadata.generation)
    )
      return;
    await Bun.sleep(200);
  }
  throw new Error(
    `Cannot prepare the fleet: the ${n} Deployments were never all observed by their controller`,
  );
}

/**
 * The pid whose argv[0] is the kube-apiserver binary and whose audit log is this control plane's:
 * its watchdog shell and `timeout` carry the same arguments, and another run's API server
 * (the machine may be shared) another audit path.
 */
function apiserverPid(cp: ControlPlane): number {
  const binary = peer("kube", "kube-apiserver");
  const audit = `--audit-log-path=${cp.auditPath}`;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (argv[0] === binary && argv.includes(audit)) return Number(entry);
  }
  throw new Error(`Cannot find kube-apiserver's pid: no process runs ${binary} with ${audit}`);
}

const storeName = (n: number) => `image-refresh-state-${n}`;

function images(n: number) {
  return Array.from({ length: Math.min(REPOS, n) }, (_, r) => ({
    repository: `${NS}/svc-${r}`,
    key: `svc-${r}`,
    targets: Array.from({ length: n }, (_, i) => i)
      .filter((i) => i % REPOS === r)
      .map((i) => ({ kind: "Deployment", namespace: NS, name: name(i), container: repo(i) })),
  }));
}

/** The limit's plan for the first `n` Deployments: the same store and workloads as the config's. */
function limitPlan(f: Pick<Fleet, "cp" | "registry">, n: number, apiUrl: string): LimitPlan {
  const imgs = images(n);
  const token = new URL(`${f.registry.url}/token`);
  token.searchParams.set("service", SERVICE);
  for (const img of imgs) token.searchParams.append("scope", `repository:${img.repository}:pull`);
  return {
    apiUrl,
    apiToken: f.cp.admin.token,
    apiCa: f.cp.caPem,
    storePath: `/api/v1/namespaces/${NS}/configmaps/${storeName(n)}`,
    tokenUrl: token.href,
    registryUrl: f.registry.url,
    tag: TAG,
    prefix: PREFIX,
    images: imgs.map((i) => ({ key: i.key, repository: i.repository })),
    workloads: Array.from({ length: n }, (_, i) => ({
      path: `/apis/apps/v1/namespaces/${NS}/deployments/${name(i)}`,
      containers: [{ name: repo(i), key: repo(i) }],
    })),
  };
}

/** The product's config and kubeconfig and the limit's plan over the first `n` Deployments, the API server at `apiUrl`. */
function writeShape(f: Pick<Fleet, "cp" | "registry" | "dir">, n: number, apiUrl: string): Shape {
  const config = {
    tag: TAG,
    registry: { host: f.registry.host },
    store: { namespace: NS, name: storeName(n) },
    annotationPrefix: PREFIX,
    rolloutTimeout: "60s",
    requestTimeout: "10s",
    images: images(n),
  };
  const tag = apiUrl === f.cp.server ? `${n}` : `${n}-relay`;
  const out = {
    configPath: join(f.dir, `config-${tag}.json`),
    kubeconfigPath: join(f.dir, `kubeconfig-${tag}`),
    planPath: join(f.dir, `plan-${tag}.json`),
  };
  writeFileSync(out.configPath, JSON.stringify(config, null, 2));
  const admin = readFileSync(f.cp.adminKubeconfig, "utf8");
  writeFileSync(out.kubeconfigPath, admin.replace(f.cp.server, apiUrl));
  writeFileSync(out.planPath, JSON.stringify(limitPlan(f, n, apiUrl)));
  return out;
}
