// The rollout wait's watch on the real API server, with the watch cache off for Deployments so
// a watch is served by etcd (with the cache on, as in the other stories, a young cluster's
// cache still holds every event since resourceVersion 1 and replays them all: seen, and that
// is the first case here). The compiled binary's first watch is sent (by a relay) from
// resourceVersion 1: before compaction it replays the Deployment's whole history, settled
// states of older generations among them, and none of them ends the wait; after etcd's history
// is compacted (through its own API, as the API server's periodic compaction does) the real
// server ends it with 410 Expired; the product re-lists, watches again from the fresh list and
// still judges the slow rollout right: refreshed only once the real controller says so, with
// the same verdict as `kubectl rollout status`. A second case expires every watch but the
// last the wait can afford: the product keeps re-listing instead of failing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compactEtcd } from "./etcd.ts";
import { verdicts } from "./judge.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Relay, type Seen, startRelay } from "./proxy.ts";
import { type Story, startStory, storyConfig } from "./story.ts";

const missing = needPeers(["kube"], "tests/real/watch.real.test.ts");
const NS = "wt";
const WEB = `/apis/apps/v1/namespaces/${NS}/deployments`;

const isWatch = (r: Seen) => r.url.pathname === WEB && r.url.searchParams.get("watch") === "1";

/** Sends the first `n` watches from resourceVersion 1 and keeps the server's answer to each. */
function expireWatches(n: number) {
  let left = n;
  return async (r: Seen) => {
    if (!isWatch(r) || left === 0) return undefined;
    left--;
    const url = new URL(r.url);
    url.searchParams.set("resourceVersion", "1");
    return { url, keep: true };
  };
}

describe.skipIf(missing)("the rollout wait's watch on the real API server", () => {
  let s: Story;
  let relay: Relay;

  beforeAll(async () => {
    s = await startStory(
      NS,
      (x) => {
        x.reg.push(`${NS}/web`, "stable");
        return [
          deployment(NS, "keeper", { image: "example.test/keeper:1" }),
          deployment(NS, "web", { image: x.tag("web"), replicas: 2 }),
        ];
      },
      { apiserverArgs: [`--watch-cache-sizes=deployments.apps#0`] },
    );
    for (const w of ["keeper", "web"]) await s.rolledOut(w);
    s.config(storyConfig(s, "keeper", ["web"]));
    expect((await s.tick()).outcome).toBe("recorded");
    expect((await s.tick()).outcome).toBe("refreshed");
    relay = startRelay(s.c);
  }, 240_000);
  afterAll(async () => {
    relay?.stop();
    await s?.stop();
  });

  const expired = () =>
    relay.log.filter((e) => e.text !== undefined).map((e) => ({ status: e.status, text: e.text ?? "" }));
  /** The 410 as the real server sends it: an ERROR event in a 200 stream, or a 410 answer. */
  const gone = (x: { status: number; text: string }) => {
    if (x.status === 410) return JSON.parse(x.text).reason;
    const ev = JSON.parse(x.text.trim().split("\n")[0] ?? "{}");
    return `${ev.type} ${ev.object?.code} ${ev.object?.reason}`;
  };

  test("a watch from resourceVersion 1 before any compaction replays history: no old generation counts", async () => {
    const next = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(next, "slow");
    relay.log.length = 0;
    relay.hook = expireWatches(1);
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    const replay =
      expired()[0]
        ?.text.trim()
        .split("\n")
        .map((l) => JSON.parse(l).type) ?? [];
    // The Deployment's creation and every change since, settled ones among them.
    expect(replay[0]).toBe("ADDED");
    expect(replay.length).toBeGreaterThan(3);
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    expect(r.ms).toBeGreaterThan(5_000);
    const v = await verdicts(s.c, "Deployment", NS, "web");
    expect(v.kubectl).toEqual({ code: 0, said: `deployment "web" successfully rolled out` });
    expect(await s.image("web")).toBe(s.pin("web", next));
  }, 180_000);

  test("a watch from a compacted resourceVersion: the real 410, a re-list, the slow rollout judged right", async () => {
    const next = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(next, "slow");
    relay.log.length = 0;
    // History before now compacted, as the API server's periodic compaction does.
    expect(await compactEtcd(s.c)).toBeGreaterThan(1);
    relay.hook = expireWatches(1);
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    expect(expired().map(gone)).toEqual(["ERROR 410 Expired"]);
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    // Slow pods are Ready after 5 s: the verdict came from a later watch, not the first list.
    expect(r.ms).toBeGreaterThan(5_000);
    const calls = relay.log
      .filter((e) => e.path === WEB)
      .map((e) => (e.query.includes("watch=1") ? "watch" : "list"));
    const first = calls.indexOf("watch");
    expect(calls.slice(first + 1, first + 3)).toEqual(["list", "watch"]);
    expect(await s.image("web")).toBe(s.pin("web", next));
    const v = await verdicts(s.c, "Deployment", NS, "web");
    expect(v.product).toEqual(v.kubectl);
    expect(v.kubectl).toEqual({ code: 0, said: `deployment "web" successfully rolled out` });
  }, 180_000);

  test("every watch expired but the wait goes on re-listing and settles", async () => {
    const next = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(next, "slow");
    relay.log.length = 0;
    await compactEtcd(s.c);
    relay.hook = expireWatches(Number.POSITIVE_INFINITY);
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    const all = expired().map(gone);
    expect(all.length).toBeGreaterThanOrEqual(2);
    expect(new Set(all)).toEqual(new Set(["ERROR 410 Expired"]));
    expect(await s.image("web")).toBe(s.pin("web", next));
  }, 180_000);
});
