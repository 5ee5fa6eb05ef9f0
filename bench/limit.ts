// The limit: the least a no-op tick can do, written as plainly as possible. All at once: one GET
// of the store (image-refresh's own ConfigMap), one GET of every distinct target workload, and the
// registry: one token request naming every repository, then the first manifest HEAD alone (a
// registry's quota belongs to the workloads' own pulls), then the other HEADs, 8 in flight as
// the product. Then compare the registry's digests and every target container's image with the
// recorded digests. No config validation, no settled rules, no telemetry, no error handling
// beyond the exit code: whatever the product spends above this is its own overhead. The token
// realm is known in advance (in the plan), which is why there is no challenge probe: a real
// client learns the realm from one.
//
// Where the product still keeps its bookkeeping on the state workload (before the store), the
// plan's storePath names that workload instead: the same one GET of one object, and the
// recorded digests are read from its annotations.
//
// It prints its one line the way the floor and the product do, with fs.writeSync (Bun's
// process.stdout builds Node's stream machinery on first use, no part of a tick's work).
//
// LIMIT_ORDER=store-first starts the registry once the store answered, as the tick must.
//
// LIMIT_FUNCTIONS=<file> appends, once the line is written, how many functions the script ran (its
// JavaScriptCore code blocks, from bun:jsc's heapStats), for the bench to set beside the tick's.
//
// Trust as the product's: the API server is verified against the CA its kubeconfig names (the
// plan's apiCa), as every Kubernetes client does; the registry against the process's roots and
// NODE_EXTRA_CA_CERTS. In Bun a request with a `ca` of its own builds a TLS context for it, about
// 2-3 ms of CPU once per process on the bench machine; LIMIT_API_TRUST=process trusts the API
// server through NODE_EXTRA_CA_CERTS instead, as this script did before (a weaker check than any
// client makes; the bench shows that row beside it).
//
// Usage: limit <plan.json>
import { appendFileSync, readFileSync, writeSync } from "node:fs";

export interface LimitPlan {
  apiUrl: string;
  apiToken: string;
  /** The API server's CA (PEM), the one its kubeconfig names. */
  apiCa: string;
  /** The store's API path; NotFound is an empty store. */
  storePath: string;
  /** The bearer realm with `service` and one `scope` per repository already in the query. */
  tokenUrl: string;
  registryUrl: string;
  tag: string;
  /** The legacy annotations' prefix, for a store path that names the state workload. */
  prefix: string;
  images: Array<{ key: string; repository: string }>;
  /** Every distinct target workload. */
  workloads: Array<{ path: string; containers: Array<{ name: string; key: string }> }>;
}

type ApiObject = {
  data?: Record<string, string>;
  metadata?: { annotations?: Record<string, string> };
  spec?: { template?: { spec?: { containers?: Array<{ name: string; image: string }> } } };
};

const ACCEPT = [
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
].join(", ");
const CONCURRENCY = 8;

const apiTls = (plan: LimitPlan) =>
  process.env.LIMIT_API_TRUST === "process" ? undefined : { ca: plan.apiCa };

/** The object, {} for NotFound, undefined for any other failure. */
async function getJson(plan: LimitPlan, path: string): Promise<ApiObject | undefined> {
  const res = await fetch(`${plan.apiUrl}${path}`, {
    headers: { Authorization: `Bearer ${plan.apiToken}`, Accept: "application/json" },
    tls: apiTls(plan),
  });
  if (res.status === 404) return {};
  return res.ok ? ((await res.json()) as ApiObject) : undefined;
}

/** The registry's digest per image key: one token request, the first HEAD alone, then the rest 8 at a time. */
async function digests(plan: LimitPlan): Promise<Map<string, string | null> | undefined> {
  const tokenRes = await fetch(plan.tokenUrl);
  if (!tokenRes.ok) return undefined;
  const { token } = (await tokenRes.json()) as { token: string };
  const out = new Map<string, string | null>();
  const head = async (img: LimitPlan["images"][0]) => {
    const res = await fetch(`${plan.registryUrl}/v2/${img.repository}/manifests/${plan.tag}`, {
      method: "HEAD",
      headers: { Authorization: `Bearer ${token}`, Accept: ACCEPT },
    });
    out.set(img.key, res.headers.get("docker-content-digest"));
  };
  const [firstImage, ...rest] = plan.images;
  if (firstImage) await head(firstImage);
  let next = 0;
  const worker = async () => {
    while (next < rest.length) await head(rest[next++] as LimitPlan["images"][0]);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rest.length) }, worker));
  return out;
}

async function main(plan: LimitPlan): Promise<number> {
  const storeRead = getJson(plan, plan.storePath);
  // LIMIT_ORDER=store-first keeps the tick's order: the registry only once the store answered
  // (a stored Retry-After means no registry request at all), beside the target reads.
  const seenRead =
    process.env.LIMIT_ORDER === "store-first" ? storeRead.then(() => digests(plan)) : digests(plan);
  const [store, live, seen] = await Promise.all([
    storeRead,
    Promise.all(plan.workloads.map((w) => getJson(plan, w.path))),
    seenRead,
  ]);
  if (!store || !seen || live.some((w) => w === undefined)) return 1;
  const annotations = store.metadata?.annotations ?? {};
  const recorded = (key: string) =>
    store.data?.[`last-refreshed-${key}-digest`] ??
    annotations[`${plan.prefix}/last-refreshed-${key}-digest`];
  let changed = plan.images.filter((img) => seen.get(img.key) !== recorded(img.key)).length;
  // A target container not on its recorded pin is a change too (a re-render, a human's pin).
  plan.workloads.forEach((w, i) => {
    const containers = live[i]?.spec?.template?.spec?.containers ?? [];
    const images = new Map(containers.map((c) => [c.name, c.image]));
    for (const c of w.containers) if (!images.get(c.name)?.endsWith(`@${recorded(c.key)}`)) changed++;
  });
  const line = changed ? `changed ${changed}\n` : "noop\n";
  writeSync(1, line);
  const counts = process.env.LIMIT_FUNCTIONS;
  if (counts) {
    const { heapStats } = require("bun:jsc") as typeof import("bun:jsc");
    appendFileSync(counts, `${heapStats().objectTypeCounts.FunctionCodeBlock ?? 0}\n`);
  }
  return 0;
}

// No top-level await: a --bytecode build is CommonJS, where it is not allowed. Import only the
// LimitPlan type from this file (type imports are erased), never its code.
const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: limit <plan.json>\n");
  process.exit(2);
}
main(JSON.parse(readFileSync(path, "utf8")) as LimitPlan).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`limit: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
