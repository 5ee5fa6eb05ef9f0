// A no-op tick over hundreds of workloads opens a handful of connections and makes the minimal
// requests: TCP relays in front of the simulated API server and registry count the connections
// (each accepted socket, before any TLS byte), the simulators' logs count the requests. Counts,
// not times: the same on a busy machine as on an idle one.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { outcomeOf, runProduct } from "../../bench/clients.ts";
import { type BenchWorld, STORE_PATH, startBenchWorld } from "../../bench/world.ts";

const WORKLOADS = 240;
const REPOSITORIES = 60;
/** At most this many connections to the API server, and to each registry, in one tick. */
const MAX_CONNECTIONS = 8;

let w: BenchWorld;
let requests: string[] = [];
let connections: { api?: number; registry?: number } = {};

beforeAll(async () => {
  w = await startBenchWorld({
    scale: { targets: WORKLOADS, maxRepos: REPOSITORIES },
    relay: true,
    registryRelay: true,
  });
  // The first tick records the digests; the next one has nothing to do.
  const first = await runProduct(w);
  if (outcomeOf(first) !== "recorded") throw new Error(`first tick: ${first.code}\n${first.stderr}`);
  w.clearLogs();
  const noop = await runProduct(w);
  if (noop.code !== 0 || outcomeOf(noop) !== "noop")
    throw new Error(`no-op tick: ${noop.code}\n${noop.stderr}`);
  requests = w.requests();
  connections = w.connections();
}, 120_000);

afterAll(() => w?.stop());

test(`a no-op tick over ${WORKLOADS} workloads opens at most ${MAX_CONNECTIONS} connections to the API server`, () => {
  expect(connections.api).toBeGreaterThan(0);
  expect(connections.api).toBeLessThanOrEqual(MAX_CONNECTIONS);
});

test(`and at most ${MAX_CONNECTIONS} to the registry`, () => {
  expect(connections.registry).toBeGreaterThan(0);
  expect(connections.registry).toBeLessThanOrEqual(MAX_CONNECTIONS);
});

test("one GET of the store and one GET per distinct target workload, nothing else of the API server", () => {
  const api = requests.filter((r) => r.startsWith("API ")).sort();
  const expected = [`API GET ${STORE_PATH}`, ...w.workloads.map((x) => `API GET ${x.path}`)].sort();
  expect(w.workloads.length).toBe(WORKLOADS);
  expect(api).toEqual(expected);
});

test("per registry at most one probe, one token request and one HEAD per repository", () => {
  const registry = requests.filter((r) => r.startsWith("registry "));
  const probes = registry.filter((r) => r === "registry GET /v2/");
  const tokens = registry.filter((r) => /^registry GET \/token\b/.test(r));
  const heads = registry.filter((r) => r.startsWith("registry HEAD "));
  expect(probes.length).toBeLessThanOrEqual(1);
  expect(tokens.length).toBeLessThanOrEqual(1);
  const repos = w.images.map((i) => i.repository);
  expect(heads.map((h) => h.replace(/^registry HEAD \/v2\/(.+)\/manifests\/.*$/, "$1")).sort()).toEqual(
    [...repos].sort(),
  );
  expect(registry.length).toBe(probes.length + tokens.length + heads.length);
});
