// The registry overlaps the API reads: it starts as soon as the store answered (its
// registry-retry-after decides whether it may be called at all), while the target reads are
// still in flight; the rules about the registry hold as before (tick-faults.e2e.test.ts: a 429
// aborts the rest, a stored Retry-After means no registry request; lib/registry: the first HEAD
// alone).
import { expect, test } from "bun:test";
import { recorded, STORE_PATH, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const PROXY = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";

let w: World;
worldPerTest((world) => {
  w = world;
}, recorded);

const entry = (path: string) => {
  const e = w.api.log.find((x) => x.method === "GET" && x.path === path);
  if (!e) throw new Error(`no GET ${path} in the API server's log`);
  return e;
};

test("the registry is asked while a slow target read is still in flight, and the tick is the same no-op", async () => {
  w.api.faults.add({ method: "GET", path: PROXY, times: 1, fault: { type: "delay", ms: 400 } });
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("outcome=noop");
  const proxy = entry(PROXY);
  expect(w.registry.log.length).toBeGreaterThan(0);
  // Every registry request started, and answered, before the slow read did.
  for (const e of w.registry.log) expect(e.end).toBeLessThan(proxy.end);
  expect(w.registry.log[0]?.start as number).toBeGreaterThanOrEqual(entry(STORE_PATH).end);
});

test("nothing is asked of the registry before the store answered", async () => {
  w.api.faults.add({ method: "GET", path: STORE_PATH, times: 1, fault: { type: "delay", ms: 300 } });
  const r = await w.run();
  expect(r.code).toBe(0);
  const store = entry(STORE_PATH);
  expect(w.registry.log.length).toBeGreaterThan(0);
  for (const e of w.registry.log) expect(e.start).toBeGreaterThanOrEqual(store.end);
});

test("a store that cannot be read: the tick ends without a single registry request", async () => {
  w.api.faults.add({
    method: "GET",
    path: STORE_PATH,
    times: 3,
    fault: { type: "status", code: 403, reason: "Forbidden", message: "forbidden" },
  });
  const r = await w.run();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("reason=store_unreadable");
  expect(w.registry.log).toEqual([]);
});

test("a new build with an unsettled target: the digest is fetched beside the reads, and the image is still skipped", async () => {
  w.registry.push("myorg/api", "stable");
  w.api.setMode("Deployment", "apps", "api-proxy", "unsettled");
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("api: Deployment apps/api-proxy not settled");
  expect(r.stderr).toMatch(/api: skipped 1\/\d+/);
  expect(w.registry.log.some((e) => e.method === "HEAD" && e.path === "/v2/myorg/api/manifests/stable")).toBe(
    true,
  );
  // Nothing re-imaged: no workload PATCH.
  expect(w.api.log.filter((e) => e.method === "PATCH" && e.path.startsWith("/apis/apps/"))).toEqual([]);
});
