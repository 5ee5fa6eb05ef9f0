// The simulated kubelet's pods: labelled by revision, served over LIST and WATCH with a label
// selector, and showing each way a build fails as a real kubelet shows it.
import { afterAll, describe, expect, test } from "bun:test";
import { call, objectPath, patch, readWatch, settled, waitFor } from "../../sim/apiserver/driver.ts";
import { type BadBuild, startApiServer, type WorkloadKind } from "../../sim/apiserver/index.ts";

const sim = await startApiServer({ stepMs: 5 });
afterAll(() => sim.stop());

let n = 0;
function fresh(kind: WorkloadKind, bad?: BadBuild) {
  const name = `p${++n}`;
  sim.addWorkload({
    kind,
    namespace: "apps",
    name,
    containers: [{ name: "app", image: "myorg/app:1" }],
    replicas: 2,
  });
  if (bad) sim.failImages(kind, "apps", name, ["myorg/app:2"], bad);
  return name;
}
const roll = (kind: WorkloadKind, name: string) =>
  patch(sim, objectPath(kind, "apps", name), "application/strategic-merge-patch+json", {
    spec: { template: { spec: { containers: [{ name: "app", image: "myorg/app:2" }] } } },
  });
// biome-ignore lint/suspicious/noExplicitAny: pods are free-form JSON
type Pod = any;
const ready = (p: Pod) => p.status.conditions.find((c: Pod) => c.type === "Ready")?.status === "True";
const onImage = (name: string, image: string) =>
  sim.pods("apps", `app=${name}`).filter((p: Pod) => p.spec.containers[0].image === image);
async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not reached");
    await Bun.sleep(10);
  }
}

describe("pods", () => {
  for (const kind of ["Deployment", "DaemonSet", "StatefulSet"] as WorkloadKind[]) {
    test(`${kind}: a healthy rollout leaves only Ready pods of the new revision`, async () => {
      const name = fresh(kind);
      await roll(kind, name);
      await waitFor(sim, kind, "apps", name, settled);
      await until(() =>
        sim.pods("apps", `app=${name}`).every((p: Pod) => p.spec.containers[0].image === "myorg/app:2"),
      );
      const pods = sim.pods("apps", `app=${name}`);
      expect(pods.length).toBe(2);
      expect(pods.map((p: Pod) => [p.metadata.name, ready(p)])).toEqual(
        pods.map((p: Pod) => [p.metadata.name, true]),
      );
      const label = kind === "Deployment" ? "pod-template-hash" : "controller-revision-hash";
      expect(new Set(pods.map((p: Pod) => p.metadata.labels[label])).size).toBe(1);
    });
  }

  test("a build that crashes after warm-up: Ready and settled first, then CrashLoopBackOff and unsettled", async () => {
    const name = fresh("Deployment", { crashAfterMs: 300 });
    await roll("Deployment", name);
    await waitFor(sim, "Deployment", "apps", name, settled);
    await until(() => onImage(name, "myorg/app:2").length === 2 && onImage(name, "myorg/app:2").every(ready));
    await until(() => onImage(name, "myorg/app:2").every((p: Pod) => !ready(p)));
    const c = onImage(name, "myorg/app:2")[0].status.containerStatuses[0];
    expect(c.restartCount).toBeGreaterThanOrEqual(1);
    expect(c.state.waiting.reason).toBe("CrashLoopBackOff");
    expect(settled(sim.getObject("Deployment", "apps", name))).toBe(false);
  });

  /** The distinct states one new pod passes through, as a watch sees each write of it. */
  const stateOf = (p: Pod) => {
    const c = p.status.containerStatuses[0];
    const [key] = Object.keys(c.state);
    return `${ready(p) ? "Ready" : "NotReady"} ${c.restartCount} ${c.state.waiting?.reason ?? key}`;
  };
  function watchStates(name: string, enough: (states: string[]) => boolean) {
    const seen = (events: Array<{ object: Pod }>) => {
      const pods = events.map((e) => e.object).filter((p) => p.spec.containers[0].image === "myorg/app:2");
      const one = pods.filter((p) => p.metadata.name === pods[0]?.metadata.name).map(stateOf);
      return one.filter((s, i) => i === 0 || one[i - 1] !== s);
    };
    const path = `/api/v1/namespaces/apps/pods?watch=true&labelSelector=app%3D${name}`;
    const watching = readWatch(sim, path, { until: (events) => enough(seen(events)), ms: 10000 });
    return async () => seen((await watching).events);
  }

  test("a build that crashes after warm-up: its first crash restarts at once, Ready again, then CrashLoopBackOff on a growing back-off", async () => {
    const name = fresh("Deployment", { crashAfterMs: 100 });
    const states = watchStates(name, (s) => s.includes("NotReady 2 CrashLoopBackOff"));
    await roll("Deployment", name);
    const seen = await states();
    expect(seen.filter((s) => s !== "NotReady 0 ContainerCreating")).toEqual([
      "Ready 0 running",
      "Ready 1 running",
      "NotReady 1 CrashLoopBackOff",
      "NotReady 2 CrashLoopBackOff",
    ]);
    const c = onImage(name, "myorg/app:2")[0].status.containerStatuses[0];
    expect(c.lastState.terminated.finishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test("a build that exits at once: restarted at once (running, not Ready), then CrashLoopBackOff", async () => {
    const name = fresh("Deployment", "crashloop");
    const states = watchStates(name, (s) => s.includes("NotReady 2 CrashLoopBackOff"));
    await roll("Deployment", name);
    expect(await states()).toEqual([
      "NotReady 1 running",
      "NotReady 1 CrashLoopBackOff",
      "NotReady 2 CrashLoopBackOff",
    ]);
  });

  test("an image that cannot be pulled: ContainerCreating, then ErrImagePull and ImagePullBackOff in turn", async () => {
    const name = fresh("Deployment", "pull");
    const states = watchStates(name, (s) => s.length >= 3);
    await roll("Deployment", name);
    expect(await states()).toEqual([
      "NotReady 0 ContainerCreating",
      "NotReady 0 ErrImagePull",
      "NotReady 0 ImagePullBackOff",
    ]);
  });

  test("a build that restarts once: Ready and settled, one restart (finishedAt its time), then Ready and settled again", async () => {
    const name = fresh("Deployment", { restartOnceAfterMs: 300 });
    await roll("Deployment", name);
    await waitFor(sim, "Deployment", "apps", name, settled);
    const rolled = new Date(Date.now() - 1000).toISOString();
    await until(() => onImage(name, "myorg/app:2").length === 2 && onImage(name, "myorg/app:2").every(ready));
    await until(() =>
      onImage(name, "myorg/app:2").every((p: Pod) => p.status.containerStatuses[0].restartCount === 1),
    );
    await until(() => onImage(name, "myorg/app:2").every(ready));
    await waitFor(sim, "Deployment", "apps", name, settled);
    for (const p of onImage(name, "myorg/app:2")) {
      const c = p.status.containerStatuses[0];
      expect([c.restartCount, c.ready, Object.keys(c.state)]).toEqual([1, true, ["running"]]);
      expect(c.lastState.terminated.reason).toBe("Error");
      expect(Date.parse(c.lastState.terminated.finishedAt)).toBeGreaterThan(Date.parse(rolled));
      expect(c.state.running.startedAt).toBe(c.lastState.terminated.finishedAt);
    }
    // Once: no second restart follows.
    await Bun.sleep(600);
    expect(onImage(name, "myorg/app:2").map((p: Pod) => p.status.containerStatuses[0].restartCount)).toEqual([
      1, 1,
    ]);
  });

  test("a build that turns unready: no restart, not Ready", async () => {
    const name = fresh("StatefulSet", { unreadyAfterMs: 100 });
    await roll("StatefulSet", name);
    await waitFor(sim, "StatefulSet", "apps", name, settled);
    await until(() => onImage(name, "myorg/app:2").every((p: Pod) => !ready(p)));
    const c = onImage(name, "myorg/app:2")[0].status.containerStatuses[0];
    expect([c.restartCount, Object.keys(c.state)]).toEqual([0, ["running"]]);
  });

  for (const [bad, reason] of [
    ["crashloop", "CrashLoopBackOff"],
    ["pull", "ErrImagePull"],
  ] as const) {
    test(`${bad}: the new pod waits in ${reason} and the rollout never settles`, async () => {
      const name = fresh("Deployment", bad);
      await roll("Deployment", name);
      await until(() => onImage(name, "myorg/app:2").length === 1);
      await Bun.sleep(50);
      const c = onImage(name, "myorg/app:2")[0].status.containerStatuses[0];
      expect(c.state.waiting.reason).toBe(reason);
      expect(settled(sim.getObject("Deployment", "apps", name))).toBe(false);
    });
  }

  test("LIST and WATCH by label selector, with pods' own resourceVersions", async () => {
    const name = fresh("Deployment");
    const list = await call(sim, `/api/v1/namespaces/apps/pods?labelSelector=app%3D${name}`);
    expect(list.status).toBe(200);
    const body = list.json as { kind: string; items: Pod[] };
    expect(body.kind).toBe("PodList");
    expect(body.items.map((p) => p.metadata.labels.app)).toEqual(expect.arrayContaining([name]));
    expect(body.items.every((p) => p.metadata.labels.app === name)).toBe(true);
    const other = await call(sim, `/api/v1/namespaces/apps/pods?labelSelector=app%20in%20(${name},nope)`);
    expect((other.json as { items: Pod[] }).items.length).toBe(body.items.length);
  });
});
