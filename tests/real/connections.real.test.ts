// A no-op tick over 200 workloads on the real kube-apiserver: a TCP relay in front of it
// (sim/tcp-relay.ts, bytes passed through, TLS end to end with the real server) counts the
// connections the tick opens, the real server's audit log counts its requests. Counts, not times.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Relay, startRelay } from "../../sim/tcp-relay.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Story, startStory } from "./story.ts";
import type { Ran } from "./tick.ts";

const missing = needPeers(["kube"], "tests/real/connections.real.test.ts");
const NS = "fleet";
const STORE = "image-refresh-state";
const WORKLOADS = 200;
const REPOS = 20;
const MAX_CONNECTIONS = 8;

/** What the fake node asks as admin meanwhile (tests/real/kubelet.ts): pods and its node. */
const KUBELET = /^\w+ \/api\/v1\/(pods|nodes)\b|^\w+ \/api\/v1\/namespaces\/[^/]+\/pods\//;

const name = (i: number) => `w-${i}`;
const repo = (i: number) => `svc-${i % REPOS}`;

describe.skipIf(missing)(`a no-op tick over ${WORKLOADS} workloads on the real API server`, () => {
  let s: Story;
  let relay: Relay;
  let kubeconfig: string;
  let noop: Ran;
  let since = 0;

  beforeAll(async () => {
    const digests = new Map<string, string>();
    s = await startStory(NS, (x) => {
      for (let r = 0; r < REPOS; r++) digests.set(`svc-${r}`, x.reg.push(`${NS}/svc-${r}`, "stable"));
      // No replicas: the controllers settle each Deployment without 200 pods on the fake node.
      return Array.from({ length: WORKLOADS }, (_, i) =>
        deployment(NS, name(i), {
          containers: [{ name: repo(i), image: x.pin(repo(i), digests.get(repo(i)) as string) }],
          replicas: 0,
        }),
      );
    });
    await allObserved(s);
    s.config({
      tag: "stable",
      registry: { host: s.reg.host },
      store: { namespace: NS, name: STORE },
      rolloutTimeout: "60s",
      requestTimeout: "10s",
      images: Array.from({ length: REPOS }, (_, r) => ({
        repository: `${NS}/svc-${r}`,
        targets: Array.from({ length: WORKLOADS / REPOS }, (_, k) => ({
          kind: "Deployment",
          namespace: NS,
          name: name(k * REPOS + r),
          container: repo(r),
        })),
      })),
    });
    const upstream = new URL(s.c.cp.server);
    relay = startRelay({ hostname: upstream.hostname, port: Number(upstream.port) });
    kubeconfig = join(s.c.cp.dir, "fleet-relay.kubeconfig");
    writeFileSync(kubeconfig, readFileSync(s.c.cp.adminKubeconfig, "utf8").replace(s.c.cp.server, relay.url));
    const first = await s.tick(undefined, kubeconfig);
    if (first.outcome !== "recorded") throw new Error(`first tick: ${first.code}\n${first.stderr}`);
    relay.clear();
    since = s.c.auditLength();
    noop = await s.tick(undefined, kubeconfig);
  }, 600_000);
  afterAll(async () => {
    relay?.stop();
    await s?.stop();
  });

  test(`at most ${MAX_CONNECTIONS} connections to the API server`, () => {
    expect([noop.code, noop.outcome]).toEqual([0, "noop"]);
    expect(relay.connections.length).toBeGreaterThan(0);
    expect(relay.connections.length).toBeLessThanOrEqual(MAX_CONNECTIONS);
  });

  test("one GET of the store and one GET per workload, as the real server's audit log has them", async () => {
    const expected = [
      `get /api/v1/namespaces/${NS}/configmaps/${STORE}`,
      ...Array.from(
        { length: WORKLOADS },
        (_, i) => `get /apis/apps/v1/namespaces/${NS}/deployments/${name(i)}`,
      ),
    ].sort();
    // The audit log is written as requests complete: read it until the tick's requests are in.
    let asked: string[] = [];
    for (let i = 0; i < 50 && asked.length < expected.length; i++) {
      asked = s.c
        .requests("admin", since)
        .map((e) => `${e.verb} ${e.requestURI}`)
        .filter((r) => !KUBELET.test(r))
        .sort();
      if (asked.length < expected.length) await Bun.sleep(100);
    }
    expect(asked).toEqual(expected);
  });
});

/** Until every Deployment of the story's namespace was seen by its controller. */
async function allObserved(s: Story): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const list = (await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments`)) as {
      items: Array<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>;
    };
    if (
      list.items.length === WORKLOADS &&
      list.items.every((d) => (d.status?.observedGeneration ?? 0) >= d.metadata.generation)
    )
      return;
    await Bun.sleep(200);
  }
  throw new Error(`the ${WORKLOADS} Deployments were never all observed by their controller`);
}
