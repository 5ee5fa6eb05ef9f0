// The world changing under a tick: a human or a second tick acts on the simulated cluster while a
// compiled tick is mid-flight (spawn.ts start()), and the tick must keep its promises: no
// digest recorded for a rollout that is not ours, no count lost, no failure without a rollout.
import { afterEach, expect, test } from "bun:test";
import { patch, settled } from "../../sim/apiserver/driver.ts";
import type { World } from "../support/world.ts";
import {
  AGENT_PATH,
  API_PATH,
  k,
  makeScene,
  outcomeOf,
  PROXY_PATH,
  STORE_PATH,
  verdictsOf,
} from "./scene.ts";
import { run, start, until } from "./spawn.ts";

let world: World | undefined;
afterEach(async () => {
  await world?.stop();
  world = undefined;
});

test("rollout undo of a target while the tick waits: the new digest is not recorded as refreshed", async () => {
  const s = await makeScene("changed");
  world = s.w;
  const w = s.w;
  const before = w.image("Deployment", "apps", "api-proxy", "proxy");
  w.api.setMode("Deployment", "apps", "api-proxy", "slow", { slowMs: 1500 });
  const t = start(w);
  // The tick has patched api-proxy and is waiting for it: a human rolls it back.
  await until("api-proxy patched", () =>
    w.image("Deployment", "apps", "api-proxy", "proxy").includes(s.digests.api as string),
  );
  const undo = await patch(w.api, PROXY_PATH, "application/json-patch+json", [
    { op: "replace", path: "/spec/template/spec/containers/0/image", value: before },
  ]);
  expect(undo.status).toBe(200);
  const r = await t.done;
  const recorded = w.ours()[k("last-refreshed-api-digest")];
  const onIt = w.image("Deployment", "apps", "api-proxy", "proxy").includes(s.digests.api as string);
  // A changed digest is recorded only once every target settled on it; otherwise the
  // image is never refreshed again (recorded == latest is "nothing to do").
  expect({ outcome: outcomeOf(r), recordedNew: recorded === s.digests.api, onIt }, r.stderr).not.toEqual({
    outcome: "refreshed",
    recordedNew: true,
    onIt: false,
  });
  // And the next tick must not call it a no-op while api-proxy runs the old image.
  const next = await run(w);
  expect(
    outcomeOf(next) !== "noop" ||
      w.image("Deployment", "apps", "api-proxy", "proxy").includes(s.digests.api as string),
    `${r.stderr}\n---\n${next.stderr}`,
  ).toBe(true);
}, 60_000);

test("a tick's reset does not wipe the count of another tick whose rollout then fails", async () => {
  const s = await makeScene("changed", (c) => (c.rolloutTimeout = "4s"));
  world = s.w;
  const w = s.w;
  w.api.setMode("DaemonSet", "agents", "node-agent", "slow", { slowMs: 2500 });
  const a = start(w);
  await until("node-agent patched by tick A", () =>
    w.image("DaemonSet", "agents", "node-agent", "agent").includes(s.digests["node-agent"] as string),
  );
  // node-agent shares no workload with api, so tick A rolls api out beside it: wait until A's
  // api-proxy (api's last workload) settled on A's build.
  await until("api-proxy settled on tick A's build", () => {
    const proxy = w.api.getObject("Deployment", "apps", "api-proxy");
    return (
      w.image("Deployment", "apps", "api-proxy", "proxy").includes(s.digests.api as string) && settled(proxy)
    );
  });
  // While tick A waits on node-agent, a newer api build is pushed and a manual Job (B) starts;
  // api-proxy will not take B's build.
  w.registry.push("myorg/api", "stable");
  w.api.setMode("Deployment", "apps", "api-proxy", "flap");
  const b = start(w);
  const [ra, rb] = await Promise.all([a.done, b.done]);
  const detail = `${ra.stderr}\n---\n${rb.stderr}`;
  expect([outcomeOf(ra), outcomeOf(rb)], detail).toEqual(["refreshed", "failed"]);
  // B persisted api's attempt 2 and its rollout failed: a failure leaves that count in place. A's
  // reset, whose resourceVersion precondition failed, must not re-read and remove B's count instead.
  expect(w.ours()[k("refresh-attempt-api")], detail).toBe("2");
}, 60_000);

test("a container renamed before the first patch: no workload touched, so held, not failed", async () => {
  // api-proxy first, so its patch is the tick's first workload write.
  const s = await makeScene("changed", (c) =>
    (c.images as Array<{ targets: unknown[] }>)[0]?.targets.reverse(),
  );
  world = s.w;
  const w = s.w;
  // The attempt write is held 800 ms; the container is renamed meanwhile (after observe).
  w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "delay", ms: 800 } });
  const t = start(w);
  await Bun.sleep(450);
  const h = await patch(w.api, PROXY_PATH, "application/json-patch+json", [
    { op: "replace", path: "/spec/template/spec/containers/0/name", value: "proxy2" },
  ]);
  expect(h.status).toBe(200);
  const r = await t.done;
  // api's workloads (api and api-proxy) take no re-image; node-agent shares none of
  // them and is refreshed as usual.
  const accepted = (path: string) =>
    w.api.log.filter(
      (e) => e.method === "PATCH" && e.path === path && e.status < 300 && e.body?.includes('/image"'),
    );
  expect([...accepted(API_PATH), ...accepted(PROXY_PATH)], r.stderr).toEqual([]);
  expect(accepted(AGENT_PATH), r.stderr).toHaveLength(1);
  // `failed` is "a rollout was started and did not settle"; `held` is "could not safely
  // start; no workload was touched".
  expect(outcomeOf(r), r.stderr).toBe("held");
  expect(verdictsOf(r), r.stderr).toEqual({ api: "held", "node-agent": "refreshed" });
}, 60_000);
