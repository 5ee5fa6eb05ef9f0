// Keeps the bench honest: the limit script and the kubectl way make exactly the requests the bench
// report says they make. No time is asserted here; benchmarks print, tests check behaviour.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { needTools } from "../tests/support/tools.ts";
import { LIMIT_SOURCE, outcomeOf, runKubectlWay, runLimit, runProduct } from "./clients.ts";
import { type BenchWorld, STATE_PATH, STORE_PATH, startBenchWorld } from "./world.ts";

let w: BenchWorld;
beforeAll(async () => {
  w = await startBenchWorld();
});
afterAll(() => w.stop());

const manifests = () => w.images.map((i) => `HEAD /v2/${i.repository}/manifests/stable`);

/** What a tick reads, all at once: the store and every distinct target workload. */
const tickReads = (x: BenchWorld) => [`GET ${STORE_PATH}`, ...x.workloads.map((t) => `GET ${t.path}`)];
/** The shell job's other reads: every distinct target workload but its state object. */
const otherTargets = () => w.workloads.filter((x) => x.path !== STATE_PATH).map((x) => `GET ${x.path}`);
const containers = () => w.workloads.reduce((n, x) => n + x.containers.length, 0);

test("the limit makes one GET of the store and per distinct workload, one token request and one HEAD per repository", async () => {
  w.clearLogs();
  const r = await runLimit(w, [process.execPath, LIMIT_SOURCE]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  // Nothing recorded yet, so every image and every target container counts as changed: the
  // reads are the same either way.
  expect(r.stdout.trim()).toBe(`changed ${w.images.length + containers()}`);
  const api = w.api.log.map((e) => `${e.method} ${e.path}`);
  expect(api.sort()).toEqual(tickReads(w).sort());
  expect(w.workloads).toHaveLength(4); // api, api-proxy, node-agent, worker
  const registry = w.registry.log.map((e) => `${e.method} ${e.path}`);
  expect(registry[0]).toBe("GET /token");
  expect(registry.slice(1).sort()).toEqual(manifests().sort());
  expect(w.registry.log[0]?.query.scope).toEqual(w.images.map((i) => `repository:${i.repository}:pull`));
});

test("the limit sees a target off its recorded pin, as a tick does", async () => {
  // The product's first tick records what the registry serves, which the seeded containers run.
  expect(outcomeOf(await runProduct(w))).toBe("recorded");
  expect((await runLimit(w, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("noop");
  w.api.setImage("Deployment", "apps", "api-proxy", "proxy", `${w.registry.host}/myorg/api:stable`);
  expect((await runLimit(w, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("changed 1");
});

const noKubectlWay = needTools([
  { tool: "kubectl", apt: "kubernetes-client" },
  { tool: "curl", apt: "curl" },
]);

test.skipIf(noKubectlWay)(
  "the kubectl way reads as the shell job did, plus one get per distinct target workload",
  async () => {
    w.clearLogs();
    const r = await runKubectlWay(w);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^changed \d+$/);
    const api = w.api.log.map((e) => `${e.method} ${e.path}${e.query.watch ? " (watch)" : ""}`);
    // rollout status gets the object, lists and watches it; then 4 counters + 3 digests, one get
    // each; then the live spec of every distinct target workload, the state object among them.
    expect(api.filter((l) => l === `GET ${STATE_PATH}`)).toHaveLength(1 + 4 + w.images.length + 1);
    for (const path of otherTargets()) expect(api.filter((l) => l === path)).toHaveLength(1);
    expect(api.filter((l) => l.endsWith("(watch)"))).toHaveLength(1);
    // Everything else is kubectl's discovery and version checks, which an empty cache makes it ask.
    const reads = new Set([`GET ${STATE_PATH}`, ...otherTargets()]);
    const rest = api.filter(
      (l) => !reads.has(l) && !/^GET \/apis\/apps\/v1\/namespaces\/apps\/deployments(\?| \(|$)/.test(l),
    );
    for (const l of rest) expect(l).toMatch(/^GET \/(version|api|apis)(\/|$)/);
    expect(w.api.log.every((e) => e.method === "GET")).toBe(true);
    const registry = w.registry.log.map((e) => `${e.method} ${e.path}`);
    expect(registry.filter((l) => l === "GET /token")).toHaveLength(w.images.length);
    expect(registry.filter((l) => l.startsWith("HEAD ")).sort()).toEqual(manifests().sort());
    expect(registry).toHaveLength(2 * w.images.length);
  },
  20_000,
);

test("the start-up relay passes a tick through unchanged and times its first connection", async () => {
  const relayed = await startBenchWorld({ relay: true });
  try {
    expect(relayed.apiUrl).not.toBe(relayed.api.url);
    expect(outcomeOf(await runProduct(relayed))).toBe("recorded");
    relayed.clearLogs();
    expect(relayed.firstConnectionAt()).toBeUndefined();
    const r = await runProduct(relayed);
    expect(outcomeOf(r)).toBe("noop");
    // Every API request went through the relay: the simulator saw the tick's whole read set.
    expect(relayed.api.log.map((e) => `${e.method} ${e.path}`).sort()).toEqual(tickReads(relayed).sort());
    // The connection is timed on accept: after the spawn, before the simulator answered anything.
    const connected = relayed.firstConnectionAt() as number;
    expect(connected).toBeGreaterThan(r.startedAt);
    expect(connected).toBeLessThanOrEqual((relayed.api.log[0]?.end as number) + 1);
    expect((await runLimit(relayed, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("noop");
  } finally {
    await relayed.stop();
  }
});
