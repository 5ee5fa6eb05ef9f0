// SPEC invariants of the tick under random histories: digest pushes, rollout outcomes per
// workload, one API and one registry fault per tick on a random request, and human re-arms.
// The real tick runs in-process against the simulators over HTTPS; after every tick the API
// request log and the state object are checked against the rules in checks.ts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { parseWorkload } from "../../lib/kube/objects.ts";
import { rolloutStatus } from "../../lib/kube/settled.ts";
import type { ControllerMode } from "../../sim/apiserver/index.ts";
import type { Fault } from "../../sim/faults.ts";
import { type Before, checkTick, type Story } from "./checks.ts";
import { type InProcessWorld, nthRequestFault, startInProcessWorld, WORKLOADS } from "./inprocess.ts";

const RUNS = Number(process.env.TICK_PROPERTY_RUNS ?? 30);
const seen = new Set<string>();

let w: InProcessWorld;
beforeAll(async () => {
  w = await startInProcessWorld();
});
afterAll(async () => {
  await w?.stop();
});

const faultArb: fc.Arbitrary<Fault> = fc.oneof(
  fc.constantFrom(500, 409, 503).map((code) => ({ type: "status" as const, code })),
  fc.constant({ type: "hang" as const }),
  fc.constant({ type: "reset" as const }),
);
const modeArb: fc.Arbitrary<ControllerMode> = fc.oneof(
  { weight: 5, arbitrary: fc.constant("healthy" as const) },
  { weight: 1, arbitrary: fc.constant("flap" as const) },
  { weight: 1, arbitrary: fc.constant("deadline" as const) },
  // on the state object: the settled guard; on a target: a rollout that never completes
  { weight: 1, arbitrary: fc.constant("unsettled" as const) },
);
const stepArb = fc.record({
  push: fc.constantFrom(undefined, undefined, "api", "node-agent"),
  modes: fc.tuple(...WORKLOADS.map(() => modeArb)),
  apiFault: fc.option(
    fc.record({
      method: fc.constantFrom("GET", "PATCH", "PATCH", "POST"),
      nth: fc.integer({ min: 1, max: 4 }),
      fault: faultArb,
    }),
    { freq: 3 },
  ),
  registryFault: fc.option(
    fc.record({
      nth: fc.integer({ min: 1, max: 4 }),
      fault: fc.oneof(faultArb, fc.constant({ type: "status" as const, code: 429 })),
    }),
    { freq: 6 },
  ),
  rearm: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
});

function snapshot(stateMode: ControllerMode): Before {
  const state = parseWorkload("Deployment", w.api.getObject("Deployment", "apps", "api"));
  return {
    annotations: { ...w.annotations() },
    current: { ...w.current },
    stateSettled: stateMode === "healthy" && rolloutStatus(state).done,
  };
}

test("every tick of a random history keeps SPEC's invariants", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, { minLength: 3, maxLength: 7 }), async (steps) => {
      w.reset();
      const story: Story = { rolloutTicks: 0 };
      // The first tick records the digests, so later pushes are changes.
      await w.tick();
      for (const s of steps) {
        w.api.faults.clear();
        w.registry.faults.clear();
        if (s.rearm && (await w.rearm()) === 0) story.rolloutTicks = 0;
        if (s.push === "api") w.current.api = w.registry.push("myorg/api", "stable");
        if (s.push === "node-agent")
          w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
        WORKLOADS.forEach((x, i) => {
          w.api.setMode(x.kind, x.namespace, x.name, s.modes[i] ?? "healthy");
        });
        if (s.apiFault)
          w.api.faults.add(nthRequestFault(s.apiFault.method, s.apiFault.nth, s.apiFault.fault));
        if (s.registryFault)
          w.registry.faults.add(nthRequestFault(undefined, s.registryFault.nth, s.registryFault.fault));
        const before = snapshot(s.modes[0] ?? "healthy");
        w.api.clearLog();
        w.lines.length = 0;
        const tick = await w.tick();
        checkTick(w, { before, tick, story, faulted: Boolean(s.apiFault || s.registryFault) });
        seen.add(tick.result.outcome);
      }
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
  // Not vacuous: the histories reach the outcomes the invariants are about.
  for (const o of ["refreshed", "failed", "skipped", "noop"]) expect(seen).toContain(o);
}, 120_000);

test("a healthy, unchanged installation writes nothing, tick after tick", async () => {
  w.reset();
  expect((await w.tick()).result.outcome).toBe("recorded");
  for (let i = 0; i < 5; i++) {
    // The record PATCH moved the generation; give the controller its step to observe it, as
    // the minutes between two CronJob ticks do, or the tick re-reads the state object once.
    await Bun.sleep(30);
    w.api.clearLog();
    const { result } = await w.tick();
    expect(result.outcome).toBe("noop");
    expect(w.api.log.map((e) => `${e.method} ${e.path}`)).toEqual([
      "GET /apis/apps/v1/namespaces/apps/deployments/api",
    ]);
  }
});
