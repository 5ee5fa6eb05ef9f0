// WATCH on the simulated API server, as apiserver handlers/watch.go and the API concepts page
// (https://kubernetes.io/docs/reference/using-api/api-concepts/) describe it.
import { afterAll, describe, expect, test } from "bun:test";
import { objectPath, patch, readWatch, waitFor } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";

const sim = await startApiServer({ stepMs: 5, bookmarkMs: 50 });
afterAll(() => sim.stop());

let n = 0;
function fresh() {
  const name = `w${++n}`;
  sim.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name,
    containers: [{ name: "app", image: "myorg/app:1" }],
    replicas: 2,
  });
  const rv = sim.getObject("Deployment", "apps", name).metadata.resourceVersion as string;
  const watch = (query: string) =>
    `${objectPath("Deployment", "apps")}?watch=1&fieldSelector=metadata.name%3D${name}&${query}`;
  return { name, rv, path: objectPath("Deployment", "apps", name), watch };
}
const annotate = (path: string, v: string) =>
  patch(sim, path, "application/merge-patch+json", { metadata: { annotations: { "x.io/a": v } } });
/** The controller has observed the latest generation, so no status write is still pending. */
const observed = (name: string) =>
  waitFor(sim, "Deployment", "apps", name, (o) => o.status.observedGeneration === o.metadata.generation);

describe("watch", () => {
  test("from a resourceVersion: only later events, one MODIFIED per write, in order", async () => {
    const w = fresh();
    const writes = (async () => {
      await Bun.sleep(30);
      await annotate(w.path, "1");
      await observed(w.name);
      await annotate(w.path, "1"); // no-op: no event
      await annotate(w.path, "2");
    })();
    // Each annotation bumps a Deployment's generation; the controller then writes observedGeneration.
    const r = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`), {
      until: (evs) =>
        evs.filter(
          (e) =>
            e.object.metadata.annotations?.["x.io/a"] === "2" && e.object.status.observedGeneration === 3,
        ).length > 0,
    });
    await writes;
    expect(r.status).toBe(200);
    expect(r.events.every((e) => e.type === "MODIFIED")).toBe(true);
    const values = r.events.map(
      (e) =>
        `${e.object.metadata.annotations["x.io/a"]}/${e.object.metadata.generation}/${e.object.status.observedGeneration}`,
    );
    expect(values).toEqual(["1/2/1", "1/2/2", "2/3/2", "2/3/3"]);
    const rvs = r.events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(rvs[0]).toBeGreaterThan(Number(w.rv));
  });

  test("events between the RV and the watch start are replayed", async () => {
    const w = fresh();
    await annotate(w.path, "late");
    const r = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`), { until: (evs) => evs.length >= 1 });
    expect(r.events[0]?.object.metadata.annotations["x.io/a"]).toBe("late");
  });

  test("without a resourceVersion the current object comes first as a synthetic ADDED", async () => {
    const w = fresh();
    for (const q of ["", "resourceVersion=0"]) {
      const r = await readWatch(sim, w.watch(q), { until: (evs) => evs.length >= 1 });
      expect(r.events[0]?.type).toBe("ADDED");
      expect(r.events[0]?.object.metadata.name).toBe(w.name);
    }
  });

  test("the field selector keeps other objects' events out", async () => {
    const a = fresh();
    const b = fresh();
    setTimeout(() => void annotate(b.path, "b").then(() => annotate(a.path, "a")), 20);
    const r = await readWatch(sim, a.watch(`resourceVersion=${a.rv}`), { until: (evs) => evs.length >= 1 });
    expect(r.events.map((e) => e.object.metadata.name)).toEqual([a.name]);
  });

  test("the legacy single-object form /deployments/{name}?watch=true works", async () => {
    const w = fresh();
    const r = await readWatch(sim, `${w.path}?watch=true`, { until: (evs) => evs.length >= 1 });
    expect(r.events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: w.name } } });
  });

  test("timeoutSeconds ends the stream cleanly with no event", async () => {
    const w = fresh();
    const t0 = Date.now();
    const r = await readWatch(sim, w.watch(`resourceVersion=${w.rv}&timeoutSeconds=1`), { ms: 3000 });
    expect(r.ended).toBe(true);
    expect(r.events).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  test("BOOKMARK events only when allowWatchBookmarks=true", async () => {
    const w = fresh();
    const asked = await readWatch(sim, w.watch(`resourceVersion=${w.rv}&allowWatchBookmarks=true`), {
      until: (evs) => evs.length >= 1,
      ms: 1000,
    });
    expect(asked.events[0]).toEqual({
      type: "BOOKMARK",
      object: {
        kind: "Deployment",
        apiVersion: "apps/v1",
        metadata: { resourceVersion: sim.resourceVersion },
      },
    });
    const notAsked = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`), { ms: 200 });
    expect(notAsked.events).toEqual([]);
  });

  test("DELETED carries the last state", async () => {
    const w = fresh();
    setTimeout(() => sim.deleteObject("Deployment", "apps", w.name), 20);
    const r = await readWatch(sim, w.watch(`resourceVersion=${sim.resourceVersion}`), {
      until: (evs) => evs.length >= 1,
    });
    expect(r.events[0]).toMatchObject({ type: "DELETED", object: { metadata: { name: w.name } } });
    expect(sim.getObject("Deployment", "apps", w.name)).toBeUndefined();
  });
});

describe("410 Expired", () => {
  const expiredEvent = (rv: string) => ({
    type: "ERROR",
    object: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `too old resource version: ${rv} (${sim.resourceVersion})`,
      reason: "Expired",
      details: {},
      code: 410,
    },
  });

  test("a compacted resourceVersion gets an in-stream ERROR event, then EOF", async () => {
    const w = fresh();
    await annotate(w.path, "x");
    await observed(w.name);
    sim.compact();
    const r = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`));
    expect(r.status).toBe(200);
    expect(r.ended).toBe(true);
    expect(r.events).toEqual([expiredEvent(w.rv)]);
    const current = await readWatch(sim, w.watch(`resourceVersion=${sim.resourceVersion}`), { ms: 100 });
    expect(current.events).toEqual([]);
  });

  test("the expired fault forces it for a fresh RV; a status fault gives a plain HTTP 410", async () => {
    const w = fresh();
    sim.faults.add({ path: /watch=1/, times: 1, fault: { type: "expired" } });
    const r = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`));
    expect(r.events).toEqual([expiredEvent(w.rv)]);
    sim.faults.add({ path: /watch=1/, times: 1, fault: { type: "status", code: 410 } });
    const http = await readWatch(sim, w.watch(`resourceVersion=${w.rv}`));
    expect(http.status).toBe(410);
    expect(http.events[0]).toMatchObject({ kind: "Status", reason: "Expired", code: 410 });
  });
});
