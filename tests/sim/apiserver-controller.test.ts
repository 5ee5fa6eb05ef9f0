// The simulated workload controllers: status sequences per kind and mode, judged with
// kubectl's rollout-status rules (kubectl pkg/polymorphichelpers/rollout_status.go).
import { afterAll, describe, expect, test } from "bun:test";
import {
  objectPath,
  patch,
  readWatch,
  rolloutStatus,
  settled,
  type WatchEvent,
  waitFor,
} from "../../sim/apiserver/driver.ts";
import {
  type ControllerMode,
  type SimApiServer,
  startApiServer,
  type WorkloadKind,
} from "../../sim/apiserver/index.ts";

const STEP = 5;
const sim = await startApiServer({ stepMs: STEP });
afterAll(() => sim.stop());
const KINDS: WorkloadKind[] = ["Deployment", "DaemonSet", "StatefulSet"];

let n = 0;
function fresh(
  kind: WorkloadKind,
  mode: ControllerMode = "healthy",
  extra: { slowMs?: number; replicas?: number; updateStrategy?: "OnDelete" } = {},
) {
  const name = `w${++n}`;
  sim.addWorkload({
    kind,
    namespace: "apps",
    name,
    containers: [{ name: "app", image: "myorg/app:1" }],
    replicas: extra.replicas ?? 3,
    mode,
    ...extra,
  });
  return {
    name,
    path: objectPath(kind, "apps", name),
    get: () => sim.getObject(kind, "apps", name),
    until: (pred: Parameters<typeof waitFor>[4], ms?: number) => waitFor(sim, kind, "apps", name, pred, ms),
  };
}
const setImage = (path: string, image: string) =>
  patch(sim, path, "application/strategic-merge-patch+json", {
    spec: { template: { spec: { containers: [{ name: "app", image }] } } },
  });

/** Messages kubectl would print for each event of a watch, with errors as "error: ...". */
function verdicts(events: WatchEvent[]): string[] {
  return events.map((e) => {
    try {
      return rolloutStatus(e.object).message;
    } catch (err) {
      return `error: ${(err as Error).message}`;
    }
  });
}

async function watchRollout(
  s: SimApiServer,
  kind: WorkloadKind,
  name: string,
  change: () => Promise<unknown>,
  stop: (msgs: string[]) => boolean,
) {
  const rv = s.getObject(kind, "apps", name).metadata.resourceVersion;
  const watching = readWatch(
    s,
    `${objectPath(kind, "apps")}?watch=1&fieldSelector=metadata.name%3D${name}&resourceVersion=${rv}`,
    {
      until: (evs) => stop(verdicts(evs)),
      ms: 2000,
    },
  );
  await change();
  return verdicts((await watching).events);
}

describe("healthy", () => {
  test("Deployment: a 3-replica rollout in five steps, each a MODIFIED event", async () => {
    const w = fresh("Deployment");
    const msgs = await watchRollout(
      sim,
      "Deployment",
      w.name,
      () => setImage(w.path, "myorg/app:2"),
      (m) => m.at(-1)?.endsWith("successfully rolled out") ?? false,
    );
    expect(msgs).toEqual([
      "Waiting for deployment spec update to be observed...",
      `Waiting for deployment "${w.name}" rollout to finish: 1 out of 3 new replicas have been updated...`,
      `Waiting for deployment "${w.name}" rollout to finish: 1 old replicas are pending termination...`,
      `Waiting for deployment "${w.name}" rollout to finish: 2 of 3 updated replicas are available...`,
      `deployment "${w.name}" successfully rolled out`,
    ]);
    const o = w.get();
    expect(o.metadata.annotations["deployment.kubernetes.io/revision"]).toBe("2");
    expect(o.metadata.generation).toBe(2); // the controller's writes never bump generation
    expect(o.status.conditions.find((c: { type: string }) => c.type === "Progressing")).toMatchObject({
      status: "True",
      reason: "NewReplicaSetAvailable",
    });
  });

  for (const kind of ["DaemonSet", "StatefulSet"] as const) {
    test(`${kind}: a template change rolls out and settles in a few steps`, async () => {
      const w = fresh(kind);
      const msgs = await watchRollout(
        sim,
        kind,
        w.name,
        () => setImage(w.path, "myorg/app:2"),
        (m) => m.length > 1 && /successfully rolled out|roll out complete/.test(m.at(-1) ?? ""),
      );
      expect(msgs[0]).toMatch(/spec update to be observed/);
      expect(msgs.length).toBeGreaterThanOrEqual(3);
      expect(settled(w.get())).toBe(true);
      // The StatefulSet controller moves currentRevision once every pod runs the update revision.
      if (kind === "StatefulSet")
        await w.until(
          (o) => o.status.currentRevision === o.status.updateRevision && o.status.currentReplicas === 3,
        );
    });
  }

  test("Deployment: an annotation-only generation bump is observed in one step, no rollout", async () => {
    const w = fresh("Deployment");
    const msgs = await watchRollout(
      sim,
      "Deployment",
      w.name,
      () => sim.setAnnotations("Deployment", "apps", w.name, { "x.io/a": "1" }) as never,
      (m) => m.length >= 2,
    );
    expect(msgs).toEqual([
      "Waiting for deployment spec update to be observed...",
      `deployment "${w.name}" successfully rolled out`,
    ]);
    expect(w.get().metadata.annotations["deployment.kubernetes.io/revision"]).toBe("1");
  });

  test("the initial state is settled for every kind", () => {
    for (const kind of KINDS) expect(settled(fresh(kind).get())).toBe(true);
  });
});

describe("failure modes", () => {
  for (const kind of KINDS) {
    test(`${kind} flap: new pods never become available, and no deadline`, async () => {
      const w = fresh(kind, "flap");
      await setImage(w.path, "myorg/app:2");
      await w.until((o) => o.status.observedGeneration === o.metadata.generation);
      await Bun.sleep(STEP * 20);
      expect(settled(w.get())).toBe(false);
      expect(() => rolloutStatus(w.get())).not.toThrow();
    });

    test(`${kind} unsettled: not settled the moment the mode is set, with no change`, () => {
      const w = fresh(kind);
      sim.setMode(kind, "apps", w.name, "unsettled");
      expect(settled(w.get())).toBe(false);
    });

    test(`${kind} crashloop: readiness goes up and down, never settles`, async () => {
      const w = fresh(kind, "crashloop");
      const field = kind === "DaemonSet" ? "numberReady" : "readyReplicas";
      const seen = new Set<number>();
      await setImage(w.path, "myorg/app:2");
      const deadline = Date.now() + 1000;
      while (seen.size < 2 && Date.now() < deadline) {
        const o = w.get();
        seen.add(o.status[field] ?? 0);
        expect(settled(o)).toBe(false);
        await Bun.sleep(2);
      }
      expect(seen.size).toBeGreaterThanOrEqual(2);
    });

    test(`${kind} slow: settles slowMs after the change, not before`, async () => {
      const w = fresh(kind, "slow", { slowMs: 150 });
      const t0 = Date.now();
      await setImage(w.path, "myorg/app:2");
      await Bun.sleep(60);
      expect(settled(w.get())).toBe(false);
      await w.until(settled, 2000);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    });

    test(`${kind}: switching back to healthy converges to settled`, async () => {
      const w = fresh(kind, "flap");
      await setImage(w.path, "myorg/app:2");
      sim.setMode(kind, "apps", w.name, "unsettled");
      await Bun.sleep(STEP * 4);
      sim.setMode(kind, "apps", w.name, "healthy");
      await w.until(settled);
    });
  }

  test("Deployment deadline: Progressing=False ProgressDeadlineExceeded after a step or two", async () => {
    const w = fresh("Deployment", "deadline");
    const msgs = await watchRollout(
      sim,
      "Deployment",
      w.name,
      () => setImage(w.path, "myorg/app:2"),
      (m) => m.some((x) => x.startsWith("error")),
    );
    expect(msgs.length).toBeLessThanOrEqual(4);
    expect(msgs.at(-1)).toBe(`error: deployment "${w.name}" exceeded its progress deadline`);
    const cond = w.get().status.conditions.find((c: { type: string }) => c.type === "Progressing");
    expect(cond).toMatchObject({ status: "False", reason: "ProgressDeadlineExceeded" });
    expect(cond.message).toMatch(/^ReplicaSet "w\d+-[a-z0-9]+" has timed out progressing\.$/);
  });

  test("OnDelete: the template change is observed but no pod is replaced", async () => {
    const w = fresh("DaemonSet", "healthy", { updateStrategy: "OnDelete" });
    await setImage(w.path, "myorg/app:2");
    const o = await w.until((x) => x.status.observedGeneration === 2);
    expect(o.status.updatedNumberScheduled).toBeUndefined();
    expect(() => rolloutStatus(o)).toThrow(
      "rollout status is only available for RollingUpdate strategy type",
    );
  });

  test("stop() clears the controller timers: no status write afterwards", async () => {
    const s = await startApiServer({ stepMs: STEP });
    s.addWorkload({
      kind: "Deployment",
      namespace: "a",
      name: "c",
      containers: [{ name: "app", image: "i:1" }],
      mode: "crashloop",
    });
    s.setAnnotations("Deployment", "a", "c", {});
    await patch(s, objectPath("Deployment", "a", "c"), "application/merge-patch+json", {
      spec: { template: { metadata: { labels: { v: "2" } } } },
    });
    await Bun.sleep(STEP * 6);
    await s.stop();
    const rv = s.resourceVersion;
    await Bun.sleep(STEP * 10);
    expect(s.resourceVersion).toBe(rv);
  });
});

describe("the controllers record every rollout", () => {
  test("a new template starts one, the settled step ends it; a newer template supersedes an open one", async () => {
    const w = fresh("Deployment", "slow", { slowMs: 60_000 });
    const mine = () => sim.rollouts.filter((r) => r.workload === `Deployment/apps/${w.name}`);
    expect(mine()).toEqual([]); // created settled: no rollout
    await setImage(w.path, "myorg/app:2");
    await w.until((o) => o.status?.observedGeneration === o.metadata.generation);
    expect(mine().map((r) => r.end)).toEqual([undefined]);
    // Superseded while it hangs: the first ends where the second starts.
    await setImage(w.path, "myorg/app:3");
    await w.until((o) => o.status?.observedGeneration === o.metadata.generation);
    const [first, second] = mine();
    expect(first?.end).toBeDefined();
    expect(second?.start).toBeGreaterThan(first?.end as number);
    sim.setMode("Deployment", "apps", w.name, "healthy");
    await w.until(settled);
    expect(mine()).toHaveLength(2);
    expect(mine()[1]?.end).toBeGreaterThan(mine()[1]?.start as number);
    // An annotation change is no new template: no rollout.
    sim.setAnnotations("Deployment", "apps", w.name, { note: "x" });
    await w.until((o) => o.status?.observedGeneration === o.metadata.generation);
    expect(mine()).toHaveLength(2);
  });
});
