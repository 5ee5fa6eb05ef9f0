// status names a target at which a refresh would be held before it is due: the operator learns
// of an OnDelete or paused workload on the quiet day, not on the tick that needed it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startWorld, type World } from "./world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
  w.api.deleteObject("DaemonSet", "agents", "node-agent");
  w.api.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "node-agent",
    containers: [{ name: "agent", image: "myorg/node-agent:stable" }],
    updateStrategy: "OnDelete",
  });
  expect((await w.run()).code).toBe(0);
});
afterAll(() => w.stop());

test("text: the OnDelete target's line says a refresh is held there, and why", async () => {
  const r = await w.run(["status"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(
    "DaemonSet agents/node-agent container agent: myorg/node-agent:stable (not pinned to a digest; a refresh is held here: rollout status is only available for RollingUpdate strategy type; its updateStrategy is OnDelete)",
  );
  expect(r.stdout).toContain(
    "Deployment apps/api-proxy container proxy: myorg/api:stable (not pinned to a digest)\n",
  );
});

test("json: blocked is set on that target only", async () => {
  const report = JSON.parse((await w.run(["status", "--json"])).stdout);
  const targets = report.images.flatMap((i: { targets: unknown[] }) => i.targets);
  expect(
    targets.filter((t: { blocked?: string }) => t.blocked).map((t: { workload: string }) => t.workload),
  ).toEqual(["DaemonSet agents/node-agent"]);
});
