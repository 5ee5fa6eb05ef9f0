// The simulated deployment controller keeps an earlier rollout's ProgressDeadlineExceeded as the
// real one does (progress.go: a condition at that reason stays until the Deployment is complete;
// only a newly created ReplicaSet resets it): a generation that brings back an existing
// ReplicaSet is observed with the very same condition, message and times, until its first
// progress; a generation with a new template starts from a fresh condition.
import { afterAll, describe, expect, test } from "bun:test";
import { objectPath, patch, readWatch, settled, type WatchEvent } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";

const STEP = 5;
const sim = await startApiServer({ stepMs: STEP });
afterAll(() => sim.stop());

// biome-ignore lint/suspicious/noExplicitAny: API objects are free-form JSON here
type Obj = any;
const progressing = (o: Obj) => o.status.conditions?.find((c: Obj) => c.type === "Progressing");
const exceeded = (o: Obj) => progressing(o)?.reason === "ProgressDeadlineExceeded";

let n = 0;
function fresh(mode: "healthy" | "deadline" = "healthy") {
  const name = `d${++n}`;
  sim.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name,
    containers: [{ name: "app", image: "myorg/app:1" }],
    replicas: 1,
    mode,
  });
  const path = objectPath("Deployment", "apps", name);
  const get = () => sim.getObject("Deployment", "apps", name);
  /** Sets the image and collects the watch events until `stop` holds for one. */
  const roll = async (image: string, stop: (o: Obj) => boolean): Promise<{ written: Obj; seen: Obj[] }> => {
    const rv = get().metadata.resourceVersion;
    const watching = readWatch(
      sim,
      `${objectPath("Deployment", "apps")}?watch=1&fieldSelector=metadata.name%3D${name}&resourceVersion=${rv}`,
      { until: (evs: WatchEvent[]) => evs.some((e) => stop(e.object)), ms: 3000 },
    );
    const r = await patch(sim, path, "application/strategic-merge-patch+json", {
      spec: { template: { spec: { containers: [{ name: "app", image }] } } },
    });
    expect(r.status).toBe(200);
    const { events } = await watching;
    expect(events.some((e) => stop(e.object))).toBe(true);
    return { written: r.json, seen: events.map((e) => e.object) };
  };
  return { name, get, roll };
}

/** The first status the controller wrote for the written generation. */
const firstObserved = (written: Obj, seen: Obj[]) =>
  seen.find((o) => o.status.observedGeneration === written.metadata.generation);

describe("an earlier rollout's progress deadline in the simulated deployment controller", () => {
  test("a revert to the old ReplicaSet is observed with the same condition, then completes", async () => {
    const d = fresh();
    sim.failImages("Deployment", "apps", d.name, ["myorg/app:2"], "deadline");
    await d.roll("myorg/app:2", exceeded);
    const before = progressing(d.get());
    const { written, seen } = await d.roll("myorg/app:1", settled);
    expect(progressing(written)).toEqual(before);
    const first = firstObserved(written, seen);
    expect(progressing(first)).toEqual(before);
    expect(first.status).toMatchObject({ replicas: 2, updatedReplicas: 1, availableReplicas: 1 });
    expect(progressing(d.get())).toMatchObject({ status: "True", reason: "NewReplicaSetAvailable" });
  });

  test("a rollout to a new template starts from a fresh condition", async () => {
    const d = fresh();
    sim.failImages("Deployment", "apps", d.name, ["myorg/app:2"], "deadline");
    await d.roll("myorg/app:2", exceeded);
    const { written, seen } = await d.roll("myorg/app:3", settled);
    expect(exceeded(firstObserved(written, seen))).toBe(false);
  });

  test("a revert that stalls again reaches a deadline of its own: another condition", async () => {
    const d = fresh("deadline");
    await d.roll("myorg/app:2", exceeded);
    const before = progressing(d.get());
    const { written, seen } = await d.roll(
      "myorg/app:1",
      (o) => exceeded(o) && progressing(o).message !== before.message,
    );
    expect(progressing(firstObserved(written, seen))).toEqual(before);
    const reasons = seen.map((o) => progressing(o).reason);
    expect(reasons.slice(reasons.indexOf("ReplicaSetUpdated"))).toEqual([
      "ReplicaSetUpdated",
      "ProgressDeadlineExceeded",
    ]);
  });
});
