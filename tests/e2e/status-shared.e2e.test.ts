// `status IMAGE` narrows what it prints, never what it observes: an image's verdict is the same
// whether it is named alone, with the other images or not at all, and it is the verdict the next
// tick reaches. Two images share Deployment api-proxy; only api has a new build.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { recorded, shareApiProxy, startWorld, type World, writes } from "../support/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
  // Both containers of api-proxy pinned to the builds the registry serves, as after a tick.
  shareApiProxy(w, {
    proxy: w.image("Deployment", "apps", "api", "api"),
    agent: w.image("DaemonSet", "agents", "node-agent", "agent"),
  });
  await recorded(w);
  w.registry.push("myorg/api", "stable");
});
afterAll(() => w.stop());

type Verdicts = Record<string, string>;

async function status(...named: string[]): Promise<Verdicts> {
  const r = await w.run(["status", "--json", ...named]);
  expect(r.code).toBe(0);
  const report = JSON.parse(r.stdout) as {
    images: Array<{ key: string; verdict: { outcome: string; reason: string } }>;
  };
  return Object.fromEntries(report.images.map((i) => [i.key, `${i.verdict.outcome}/${i.verdict.reason}`]));
}

test("status api, status node-agent and status agree on every verdict, and the tick reaches it", async () => {
  w.api.clearLog();
  const all = await status();
  expect(all).toEqual({ api: "refreshed/digest_changed", "node-agent": "noop/unchanged" });
  expect(await status("api")).toEqual({ api: all.api as string });
  expect(await status("node-agent")).toEqual({ "node-agent": all["node-agent"] as string });
  expect(await status("node-agent", "api")).toEqual(all);
  expect(writes(w.api)).toEqual([]);
  const tick = await w.run();
  expect(tick.code).toBe(0);
  expect(tick.stderr).toContain("api: refreshed; node-agent: noop");
});

test("text: status api prints api alone, a refresh due, not held by the image it shares api-proxy with", async () => {
  w.registry.push("myorg/api", "stable");
  const r = await w.run(["status", "api"]);
  expect(r.code).toBe(0);
  // A forecast, not a deed: the refresh is due, nothing has been refreshed yet.
  expect(r.stdout).toContain("image api (myorg/api): REFRESH DUE (digest_changed)");
  expect(r.stdout).not.toContain("image node-agent");
  expect(r.stdout).not.toContain("shared_workload");
});
