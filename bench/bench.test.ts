// Keeps the bench honest: the limit script and the kubectl way make exactly the requests the bench
// report says they make. No time is asserted here; benchmarks print, tests check behaviour.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRelay } from "../sim/tcp-relay.ts";
import { generateTls } from "../sim/tls.ts";
import { needTools } from "../tests/support/tools.ts";
import {
  LIMIT_SOURCE,
  limitPlan,
  outcomeOf,
  productReads,
  runKubectlReads,
  runKubectlWay,
  runLimit,
  runProduct,
} from "./clients.ts";
import type { LimitPlan } from "./limit.ts";
import { timed } from "./measure.ts";
import { type BenchWorld, STATE_PATH, STORE_PATH, startBenchWorld } from "./world.ts";

let w: BenchWorld;
beforeAll(async () => {
  w = await startBenchWorld();
});
afterAll(() => w.stop());

const manifests = () => w.images.map((i) => `HEAD /v2/${i.repository}/manifests/stable`);

/** Every distinct target workload but the state object: what a tick reads after it. */
const otherTargets = () => w.workloads.filter((x) => x.path !== STATE_PATH).map((x) => `GET ${x.path}`);
const containers = () => w.workloads.reduce((n, x) => n + x.containers.length, 0);
const allTargets = () => w.workloads.map((x) => `GET ${x.path}`);

test("the limit reads the store and every distinct workload, asks one token and one HEAD per repository, the first HEAD alone", async () => {
  w.clearLogs();
  // Slow answers make the order visible at the simulators' millisecond clocks: the API reads
  // start while the token request is out, and no HEAD starts while the first is out.
  w.registry.faults.add({ path: "/token", times: 1, fault: { type: "delay", ms: 150 } });
  const firstRepo = w.images[0]?.repository;
  w.registry.faults.add({
    path: `/v2/${firstRepo}/manifests/stable`,
    times: 1,
    fault: { type: "delay", ms: 60 },
  });
  const r = await runLimit(w, [process.execPath, LIMIT_SOURCE]);
  w.registry.faults.clear();
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  // Nothing recorded yet, so every image and every target container counts as changed: the
  // reads are the same either way.
  expect(r.stdout.trim()).toBe(`changed ${w.images.length + containers()}`);
  const api = w.api.log.map((e) => `${e.method} ${e.path}`);
  expect(api.sort()).toEqual([`GET ${w.storePath}`, ...allTargets()].sort());
  expect(allTargets()).toHaveLength(4);
  const [token, first, ...rest] = w.registry.log;
  expect(`${token?.method} ${token?.path}`).toBe("GET /token");
  expect(token?.query.scope).toEqual(w.images.map((i) => `repository:${i.repository}:pull`));
  expect([first, ...rest].map((e) => `${e?.method} ${e?.path}`).sort()).toEqual(manifests().sort());
  // The first HEAD starts once the token came back; the others once the first HEAD answered.
  expect(first?.start).toBeGreaterThanOrEqual(token?.end as number);
  expect(first?.path).toBe(`/v2/${firstRepo}/manifests/stable`);
  for (const e of rest) expect(e.start).toBeGreaterThanOrEqual(first?.end as number);
  for (const e of w.api.log) expect(e.start).toBeLessThan(token?.end as number);
});

test("the limit sees a target off its recorded pin, as a tick does", async () => {
  // The product's first tick records what the registry serves, which the seeded containers run.
  expect(outcomeOf(await runProduct(w))).toBe("recorded");
  expect((await runLimit(w, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("noop");
  w.api.setImage("Deployment", "apps", "api-proxy", "proxy", `${w.registry.host}/myorg/api:stable`);
  expect((await runLimit(w, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("changed 1");
});

test("the limit verifies the API server against the kubeconfig's CA alone, as the product does", async () => {
  // Another CA in the plan: the API reads fail although NODE_EXTRA_CA_CERTS trusts the world's.
  const plan = JSON.parse(readFileSync(limitPlan(w), "utf8")) as LimitPlan;
  const other = join(w.dir, "limit-plan-other-ca.json");
  writeFileSync(other, JSON.stringify({ ...plan, apiCa: generateTls().caPem }));
  const refused = await timed([process.execPath, LIMIT_SOURCE, other], w.env());
  expect(refused.code).not.toBe(0);
  expect(refused.stdout).toBe("");
  // Trusted process-wide instead (the row beside it), the plan's CA is not used.
  const processWide = await timed(
    [process.execPath, LIMIT_SOURCE, other],
    w.env({ LIMIT_API_TRUST: "process" }),
  );
  expect(processWide.code).toBe(0);
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

test.skipIf(noKubectlWay)(
  "the kubectl-reads way makes exactly the product's reads, a kubectl per API read, a curl per registry request",
  async () => {
    const fresh = await startBenchWorld();
    try {
      expect(outcomeOf(await runProduct(fresh))).toBe("recorded");
      fresh.clearLogs();
      expect(outcomeOf(await runProduct(fresh))).toBe("noop");
      const product = fresh.requests().sort();
      const reads = productReads(fresh);
      expect(reads.split("\n")).toHaveLength(product.length);
      fresh.clearLogs();
      const r = await runKubectlReads(fresh, reads);
      expect(r.stderr).toBe("");
      expect(r.stdout.trim()).toBe("noop");
      // kubectl's own discovery and version checks aside, the same requests as the product's.
      const discovery = /^API GET \/(version|api|apis)(\/[^/]+){0,2}$/;
      const made = fresh.requests().filter((l) => !(discovery.test(l) && !l.includes("/namespaces/")));
      expect(made.sort()).toEqual(product);
      expect(
        fresh
          .requests()
          .filter((l) => l.startsWith("API "))
          .every((l) => l.startsWith("API GET ")),
      ).toBe(true);
      // It compares what it read: a target off its pin is a change.
      fresh.api.setImage(
        "Deployment",
        "apps",
        "worker",
        "worker",
        `${fresh.registry.host}/myorg/worker:stable`,
      );
      expect((await runKubectlReads(fresh, reads)).stdout.trim()).toBe("changed 1");
    } finally {
      await fresh.stop();
    }
  },
  30_000,
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
    expect(relayed.api.log.map((e) => `${e.method} ${e.path}`).sort()).toEqual(
      [
        ...(relayed.storePath === STORE_PATH ? [`GET ${STORE_PATH}`] : []),
        ...relayed.workloads.map((x) => `GET ${x.path}`),
      ].sort(),
    );
    // The connection is timed on accept: after the spawn, before the simulator answered anything.
    const connected = relayed.firstConnectionAt() as number;
    expect(connected).toBeGreaterThan(r.startedAt);
    expect(connected).toBeLessThanOrEqual((relayed.api.log[0]?.end as number) + 1);
    expect((await runLimit(relayed, [process.execPath, LIMIT_SOURCE])).stdout.trim()).toBe("noop");
  } finally {
    await relayed.stop();
  }
});

test("the start-up probe counts the functions each step runs only when asked, and the limit counts its own", async () => {
  const marks = join(w.dir, "probe-marks.jsonl");
  const lastLine = () => JSON.parse(readFileSync(marks, "utf8").trim().split("\n").at(-1) as string);
  await runProduct(w); // records the digests: the runs below are no-op ticks
  const timedOnly = await runProduct(w, ["tick"], { IMAGE_REFRESH_STARTUP_TIMING: marks });
  expect(outcomeOf(timedOnly)).toBe("noop");
  expect(Object.keys(lastLine())).toEqual(["at", "cpu"]);
  const counted = await runProduct(w, ["tick"], {
    IMAGE_REFRESH_STARTUP_TIMING: marks,
    IMAGE_REFRESH_STARTUP_FUNCTIONS: "1",
  });
  expect(outcomeOf(counted)).toBe("noop");
  const { at, functions } = lastLine() as { at: Record<string, number>; functions: Record<string, number> };
  expect(Object.keys(functions).sort()).toEqual(Object.keys(at).sort());
  // In the order the marks were reached, the count only grows, and every step after the config's
  // check has run something of its own.
  const order = Object.keys(at).sort((a, b) => (at[a] as number) - (at[b] as number));
  const counts = order.map((name) => functions[name] as number);
  expect(counts).toEqual([...counts].sort((a, b) => a - b));
  expect(functions["config-checked"]).toBeGreaterThan(functions["config-parsed"] as number);
  expect(functions.exit).toBeGreaterThan(100);
  const limitCounts = join(w.dir, "limit-functions.txt");
  const l = await runLimit(w, [process.execPath, LIMIT_SOURCE], { LIMIT_FUNCTIONS: limitCounts });
  expect(l.stdout.trim()).toBe("noop");
  const ran = Number(readFileSync(limitCounts, "utf8").trim());
  expect(ran).toBeGreaterThan(0);
  expect(ran).toBeLessThan(functions.exit as number);
});

test("the distance relay holds every byte back each way: a request over a fresh connection costs its round trips", async () => {
  const [hostname, port] = w.registry.host.split(":") as [string, string];
  const delay = 40;
  const far = startRelay({ hostname, port: Number(port) }, delay);
  try {
    const env = w.env();
    const probe = `const t = performance.now(); const r = await fetch(${JSON.stringify(`${far.url}/v2/`)}); await r.text(); console.log(r.status, performance.now() - t);`;
    const r = await timed([process.execPath, "-e", probe], env);
    expect(r.code).toBe(0);
    const [status, ms] = r.stdout.trim().split(" ");
    // Passed through unchanged (the registry's own answer to its API root)...
    expect(status).toBe("401");
    // ...after the TLS handshake's round trip and the request's: never sooner than 2 × 2 × delay.
    expect(Number(ms)).toBeGreaterThanOrEqual(4 * delay);
  } finally {
    far.stop();
  }
});
