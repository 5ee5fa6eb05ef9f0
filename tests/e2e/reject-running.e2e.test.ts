// A rejected build that is running: `reject` says so and names the workloads, and the next tick
// rolls them back to the build before it (a revert, waited for and verified, never an attempt:
// no count), then records that build again; the rejected build stays out. Without an earlier build
// `reject` says what to run by hand and the tick rolls nothing back. A workload a human pinned to
// the rejected build is left alone.
import { describe, expect, test } from "bun:test";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const image = (name: string, container: string) => w.image("Deployment", "apps", name, container);
const patches = () => w.api.log.filter((e) => e.method === "PATCH" && e.path.includes("/deployments/"));

/** api refreshed from `old` to `bad`, which is healthy enough to be verified and recorded. */
async function running(): Promise<{ old: string; bad: string }> {
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const bad = w.registry.push("myorg/api", "stable");
  expect((await w.run()).stderr).toContain("refreshed: api: refreshed");
  expect(w.ours()[k("previous-api-digest")]).toBe(old);
  return { old, bad };
}

describe("reject of a running build", () => {
  test("reject names the workloads; the next tick rolls them back, uncounted; the one after leaves them", async () => {
    const { old, bad } = await running();
    const r = await w.run(["reject", "api"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      `${bad} is running on Deployment apps/api, Deployment apps/api-proxy: the next tick rolls them back to ${old}`,
    );
    w.api.clearLog();
    const back = await w.run();
    expect(back.code).toBe(0);
    expect(back.stderr).toContain(
      `the rejected build ${bad} runs on Deployment apps/api, Deployment apps/api-proxy: rolling back to ${old}`,
    );
    expect(back.stderr).toContain("paused: api: paused");
    expect(image("api", "api")).toBe(pin(old));
    expect(image("api-proxy", "proxy")).toBe(pin(old));
    const book = w.ours();
    expect(book[k("refresh-attempt-api")]).toBeUndefined();
    expect(book[k("last-refreshed-api-digest")]).toBe(old);
    expect(book[k("rejected-api-digest")]).toBe(bad);
    w.api.clearLog();
    const after = await w.run();
    expect([after.code, after.stderr.includes("paused: api: paused")]).toEqual([0, true]);
    expect(patches()).toEqual([]);
  }, 30_000);

  test("without an earlier build: reject says what to run by hand; the tick rolls nothing back", async () => {
    await recorded(w);
    const only = w.ours()[k("last-refreshed-api-digest")] as string;
    const r = await w.run(["reject", "api", only]);
    expect(r.stderr).toContain(
      `${only} is running on Deployment apps/api, Deployment apps/api-proxy, and no earlier build is recorded to go back to: put them back by hand`,
    );
    w.api.clearLog();
    const t = await w.run();
    expect([t.code, t.stderr.includes("paused: api: paused")]).toEqual([0, true]);
    expect(patches()).toEqual([]);
  }, 30_000);

  test("a workload a human pinned to the rejected build is left alone", async () => {
    const { old, bad } = await running();
    // The human's own pin: their write moved the field to them (a write of the same value would not).
    w.api.setImage("Deployment", "apps", "api-proxy", "proxy", pin(old), { manager: "kubectl-set" });
    w.api.setImage("Deployment", "apps", "api-proxy", "proxy", pin(bad), { manager: "kubectl-set" });
    await w.run(["reject", "api"]);
    w.api.clearLog();
    const t = await w.run();
    expect(t.stderr).not.toContain("rolling back");
    expect(image("api-proxy", "proxy")).toBe(pin(bad));
  }, 30_000);
});
