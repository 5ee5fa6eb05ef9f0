// The registry's connection is opened while the store is read (lib/registry/preconnect.ts): the
// registry's first request after the store's answer travels on it, and nothing is asked of the
// registry before that answer (registry-overlap.e2e.test.ts). A TCP relay in front of the
// registry shows what its HTTP log cannot: when each connection was opened and used.
import { afterEach, expect, test } from "bun:test";
import { type Relay, startRelay } from "../../sim/tcp-relay.ts";
import { recorded, STORE_PATH, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const STORE_DELAY_MS = 300;

let w: World;
let relay: Relay | undefined;
worldPerTest((world) => {
  w = world;
}, recorded);
afterEach(() => relay?.stop());

/** Puts the relay between the tick and the registry's API (the token endpoint stays direct). */
function relayRegistry(): Relay {
  const [hostname, port] = w.registry.host.split(":") as [string, string];
  const r = startRelay({ hostname, port: Number(port) });
  w.writeConfig((c) => {
    c.registry.endpoint = r.url;
  });
  return r;
}

/** The store's next answer comes STORE_DELAY_MS late: time for a connection opened beside it. */
function holdStoreBack(): void {
  w.api.faults.add({
    method: "GET",
    path: STORE_PATH,
    times: 1,
    fault: { type: "delay", ms: STORE_DELAY_MS },
  });
}

function storeEnd(): number {
  const e = w.api.log.find((x) => x.method === "GET" && x.path === STORE_PATH);
  if (!e) throw new Error("no GET of the store in the API server's log");
  return e.end;
}

test("the registry's connection is opened while the store is read, and its first request travels on it", async () => {
  relay = relayRegistry();
  holdStoreBack();
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("outcome=noop");
  const end = storeEnd();
  const first = relay.connections[0];
  if (!first) throw new Error("the registry was never reached");
  // Opened well before the store answered (the store's answer was held back 300 ms)...
  expect(first.accepted).toBeLessThan(end - STORE_DELAY_MS / 2);
  // ...and used after it: the registry's first request went on the connection already open.
  expect(first.sent.some((t) => t >= end)).toBe(true);
  // No request before the store answered.
  for (const e of w.registry.log) expect(e.start).toBeGreaterThanOrEqual(end);
});

test("a registry request with TLS options of its own opens no connection early", async () => {
  relay = relayRegistry();
  holdStoreBack();
  // Verification stays on; the variable alone makes every registry request carry a tls option.
  const r = await w.run([], { NODE_TLS_REJECT_UNAUTHORIZED: "1" });
  expect(r.code).toBe(0);
  expect(relay.connections.length).toBeGreaterThan(0);
  for (const c of relay.connections) expect(c.accepted).toBeGreaterThanOrEqual(storeEnd() - 1);
});

test("a registry held by a stored Retry-After: at most the one connection opened early, not a single request", async () => {
  relay = relayRegistry();
  w.setBook({ "registry-retry-after": new Date(Date.now() + 3_600_000).toISOString() });
  w.registry.clearLog();
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("not calling it before");
  expect(w.registry.log).toEqual([]);
  expect(relay.connections.length).toBeLessThanOrEqual(1);
});
