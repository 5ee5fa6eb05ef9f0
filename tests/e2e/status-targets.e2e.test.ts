// status names a target at which a refresh would be held before it is due: the operator learns
// of an OnDelete or paused workload on the quiet day, not on the tick that needed it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { replaceWorkload, startWorld, type World } from "../support/world.ts";

let w: World;
let pinned: string;
beforeAll(async () => {
  w = await startWorld();
  // Pinned to the build the registry serves, as on a quiet day: nothing is due.
  pinned = w.image("DaemonSet", "agents", "node-agent", "agent");
  replaceWorkload(w, {
    kind: "DaemonSet",
    namespace: "agents",
    name: "node-agent",
    containers: [{ name: "agent", image: pinned }],
    updateStrategy: "OnDelete",
  });
  expect((await w.run()).code).toBe(0);
});
afterAll(() => w.stop());

test("text: the OnDelete target's line says a refresh is held there, and why", async () => {
  const r = await w.run(["status"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("image node-agent (myorg/node-agent): NOOP (unchanged)");
  const line = (name: string) => r.stdout.split("\n").find((l) => l.startsWith(`  ${name} container `));
  expect(line("DaemonSet agents/node-agent")).toStartWith(
    `  DaemonSet agents/node-agent container agent: ${pinned} (in sync: pinned to the recorded digest; `,
  );
  expect(line("DaemonSet agents/node-agent")).toEndWith(
    "; a refresh is held here: rollout status is only available for RollingUpdate strategy type; its updateStrategy is OnDelete)",
  );
  expect(line("Deployment apps/api-proxy")).toMatch(/ \(in sync: pinned to the recorded digest; [^;]+\)$/);
});

test("json: blocked is set on that target only", async () => {
  const report = JSON.parse((await w.run(["status", "--json"])).stdout);
  const targets = report.images.flatMap((i: { targets: unknown[] }) => i.targets);
  expect(
    targets.filter((t: { blocked?: string }) => t.blocked).map((t: { workload: string }) => t.workload),
  ).toEqual(["DaemonSet agents/node-agent"]);
});
