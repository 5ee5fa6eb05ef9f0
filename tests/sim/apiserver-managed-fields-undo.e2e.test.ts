// `kubectl rollout undo` against the simulated API server: it lists the Deployment's
// ReplicaSets by selector, picks one by `deployment.kubernetes.io/revision`, and JSON-patches
// `/spec/template` and `/metadata/annotations` back without a field manager, so the restored
// image belongs to `kubectl` (its User-Agent). The ReplicaSets themselves are checked without
// kubectl first, so a machine without it still tests what kubectl reads.
import { afterAll, describe, expect, test } from "bun:test";
import { imageOwners } from "../../lib/kube/managed-fields.ts";
import { call } from "../../sim/apiserver/driver.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";
import { kubectlFor } from "../support/kubectl.ts";
import { needTool } from "../support/tools.ts";

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });

const sim = await startApiServer({ stepMs: 5 });
afterAll(() => sim.stop());
const kubectl = kubectlFor(sim, "sim-mf-undo-");
const REVISION = "deployment.kubernetes.io/revision";

let n = 0;
function fresh(annotations?: Record<string, string>) {
  const name = `u${++n}`;
  sim.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name,
    manager: "helm",
    annotations,
    containers: [{ name: "app", image: "myorg/app:1" }],
  });
  const get = () => sim.getObject("Deployment", "apps", name);
  return {
    name,
    ref: `deployment/${name}`,
    get,
    image: () => get().spec.template.spec.containers[0].image,
    owners: () => imageOwners(get().metadata.managedFields, "app").map((o) => o.manager),
    /** Waits for the controller to observe the last write (bounded). */
    settled: async () => {
      for (let i = 0; i < 200 && get().status.observedGeneration !== get().metadata.generation; i++)
        await Bun.sleep(5);
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: ReplicaSets as the API returns them
type Rs = any;
async function replicaSets(name: string): Promise<Rs[]> {
  const r = await call(sim, `/apis/apps/v1/namespaces/apps/replicasets?labelSelector=app%3D${name}`);
  expect(r.status).toBe(200);
  expect(r.json.kind).toBe("ReplicaSetList");
  return r.json.items;
}
const byRevision = (items: Rs[]) =>
  Object.fromEntries(
    items.map((rs) => [rs.metadata.annotations[REVISION], rs.spec.template.spec.containers[0].image]),
  );

describe("the deployment controller's ReplicaSets", () => {
  test("one per template, controlled by the Deployment, hash-labelled, reused when a template returns", async () => {
    const w = fresh();
    await w.settled();
    const [first] = await replicaSets(w.name);
    expect(first.metadata.ownerReferences).toEqual([
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: w.name,
        uid: w.get().metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    const hash = first.metadata.labels["pod-template-hash"];
    expect(first.metadata.name).toBe(`${w.name}-${hash}`);
    expect(first.spec.selector.matchLabels).toEqual({ app: w.name, "pod-template-hash": hash });
    expect(first.spec.template.metadata.labels).toEqual({ app: w.name, "pod-template-hash": hash });
    sim.setImage("Deployment", "apps", w.name, "app", "myorg/app:2");
    await w.settled();
    sim.setImage("Deployment", "apps", w.name, "app", "myorg/app:1");
    await w.settled();
    const items = await replicaSets(w.name);
    expect(items.length).toBe(2);
    expect(byRevision(items)).toEqual({ "2": "myorg/app:2", "3": "myorg/app:1" });
    const back = items.find((rs) => rs.metadata.annotations[REVISION] === "3");
    expect(back.metadata.uid).toBe(first.metadata.uid); // the same ReplicaSet, not a new one
    expect(items.map((rs) => rs.spec.replicas).sort()).toEqual([0, 1]);
    expect(w.get().metadata.annotations[REVISION]).toBe("3");
  });

  test("a deleted Deployment's ReplicaSets go with it", async () => {
    const w = fresh();
    expect((await replicaSets(w.name)).length).toBe(1);
    sim.deleteObject("Deployment", "apps", w.name);
    expect(await replicaSets(w.name)).toEqual([]);
  });
});

describe.skipIf(noKubectl)("kubectl rollout undo", () => {
  test("restores the previous image with a JSON patch and no fieldManager: owned by `kubectl`", async () => {
    const w = fresh();
    expect((await kubectl("set", "image", w.ref, "app=myorg/app:2")).code).toBe(0);
    await w.settled();
    expect(w.owners()).toEqual(["kubectl-set"]);
    sim.clearLog();
    const r = await kubectl("rollout", "undo", w.ref);
    expect(r.err).toBe("");
    expect(r.out).toContain(`deployment.apps/${w.name} rolled back`);
    const writes = sim.log.filter((e) => e.method === "PATCH");
    expect(writes.map((e) => [e.contentType, e.query.fieldManager])).toEqual([
      ["application/json-patch+json", undefined],
    ]);
    expect(
      sim.log.some((e) => e.path.endsWith("/replicasets") && e.query.labelSelector === `app=${w.name}`),
    ).toBe(true);
    expect(w.image()).toBe("myorg/app:1");
    expect(w.owners()).toEqual(["kubectl"]);
    await w.settled();
    expect(w.get().metadata.annotations[REVISION]).toBe("3");
    expect((await replicaSets(w.name)).length).toBe(2); // revision 1's ReplicaSet came back
  });

  test("the Deployment's annotations come back from the old ReplicaSet too", async () => {
    const w = fresh({ "x.io/state": "1" });
    await kubectl("set", "image", w.ref, "app=myorg/app:2");
    await w.settled();
    expect((await kubectl("annotate", "--overwrite", w.ref, "x.io/state=2", "x.io/later=y")).code).toBe(0);
    await w.settled();
    expect((await kubectl("rollout", "undo", w.ref)).code).toBe(0);
    const a = w.get().metadata.annotations;
    expect(a["x.io/state"]).toBe("1");
    expect(a["x.io/later"]).toBeUndefined();
  });

  test("--to-revision picks that ReplicaSet; history lists every revision", async () => {
    const w = fresh();
    for (const tag of ["2", "3"]) {
      expect((await kubectl("set", "image", w.ref, `app=myorg/app:${tag}`)).code).toBe(0);
      await w.settled();
    }
    const history = await kubectl("rollout", "history", w.ref);
    expect(history.out).toMatch(/REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>\n3\s+<none>/);
    expect((await kubectl("rollout", "undo", w.ref, "--to-revision=1")).code).toBe(0);
    expect(w.image()).toBe("myorg/app:1");
    expect(w.owners()).toEqual(["kubectl"]);
  });

  test("without history kubectl refuses and writes nothing", async () => {
    const w = fresh();
    await w.settled();
    sim.clearLog();
    const r = await kubectl("rollout", "undo", w.ref);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain(`no rollout history found for deployment "${w.name}"`);
    expect(sim.log.filter((e) => e.method === "PATCH")).toEqual([]);
  });
});
