// Keeps the bench honest: the limit script and the kubectl way make exactly the requests the bench
// report says they make. No time is asserted here; benchmarks print, tests check behaviour.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { needTools } from "../tests/tools.ts";
import { LIMIT_SOURCE, runKubectlWay, runLimit } from "./clients.ts";
import { type BenchWorld, STATE_PATH, startBenchWorld } from "./world.ts";

let w: BenchWorld;
beforeAll(async () => {
  w = await startBenchWorld();
});
afterAll(() => w.stop());

const manifests = () => w.images.map((i) => `HEAD /v2/${i.repository}/manifests/stable`);

test("the limit makes one state GET, one token request and one HEAD per repository", async () => {
  w.clearLogs();
  const r = await runLimit(w, [process.execPath, LIMIT_SOURCE]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  // Nothing recorded yet, so every image counts as changed: the reads are the same either way.
  expect(r.stdout.trim()).toBe(`changed ${w.images.length}`);
  expect(w.api.log.map((e) => `${e.method} ${e.path}`)).toEqual([`GET ${STATE_PATH}`]);
  const registry = w.registry.log.map((e) => `${e.method} ${e.path}`);
  expect(registry[0]).toBe("GET /token");
  expect(registry.slice(1).sort()).toEqual(manifests().sort());
  expect(w.registry.log[0]?.query.scope).toEqual(w.images.map((i) => `repository:${i.repository}:pull`));
});

const noKubectlWay = needTools([
  { tool: "kubectl", apt: "kubernetes-client" },
  { tool: "curl", apt: "curl" },
]);

test.skipIf(noKubectlWay)(
  "the kubectl way reads as the shell job did: rollout status, 7 annotation gets, token + HEAD per image",
  async () => {
    w.clearLogs();
    const r = await runKubectlWay(w);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`changed ${w.images.length}`);
    const api = w.api.log.map((e) => `${e.method} ${e.path}${e.query.watch ? " (watch)" : ""}`);
    // rollout status gets the object, lists and watches it; then 4 counters + 3 digests, one get each.
    expect(api.filter((l) => l === `GET ${STATE_PATH}`)).toHaveLength(1 + 4 + w.images.length);
    expect(api.filter((l) => l.endsWith("(watch)"))).toHaveLength(1);
    // Everything else is kubectl's discovery and version checks, which an empty cache makes it ask.
    const rest = api.filter((l) => !l.startsWith(`GET ${STATE_PATH}`) && !l.includes("/deployments"));
    for (const l of rest) expect(l).toMatch(/^GET \/(version|api|apis)(\/|$)/);
    expect(w.api.log.every((e) => e.method === "GET")).toBe(true);
    const registry = w.registry.log.map((e) => `${e.method} ${e.path}`);
    expect(registry.filter((l) => l === "GET /token")).toHaveLength(w.images.length);
    expect(registry.filter((l) => l.startsWith("HEAD ")).sort()).toEqual(manifests().sort());
    expect(registry).toHaveLength(2 * w.images.length);
  },
  20_000,
);
