// The real kubectl against the simulated API server's managedFields: each command's own field
// manager (its --field-manager default: `kubectl-set` for set image, `kubectl-patch` for patch, ...)
// ends up owning what it changed, and `kubectl get --show-managed-fields` shows the entries. Where
// kubectl and the simulator disagree, the simulator is wrong.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { imageOwners } from "../../lib/kube/managed-fields.ts";
import { startApiServer } from "../../sim/apiserver/index.ts";
import { kubectlFor } from "../support/kubectl.ts";
import { needTool } from "../support/tools.ts";

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });

const sim = await startApiServer({ stepMs: 5 });
afterAll(() => sim.stop());
const kubectl = kubectlFor(sim, "sim-mf-kubectl-");
const PIN = `myorg/app@sha256:${"b".repeat(64)}`;

let n = 0;
function fresh() {
  const name = `m${++n}`;
  sim.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name,
    manager: "helm",
    containers: [
      { name: "app", image: "myorg/app:1" },
      { name: "sidecar", image: "myorg/sidecar:1" },
    ],
    initContainers: [{ name: "init", image: "myorg/init:1" }],
  });
  const get = () => sim.getObject("Deployment", "apps", name);
  return { name, ref: `deployment/${name}`, get, mf: () => get().metadata.managedFields };
}

function manifest(name: string, image: string): string {
  const path = join(tmpdir(), `sim-mf-${name}.json`);
  const labels = { app: name };
  const doc = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "apps", labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            { name: "app", image },
            { name: "sidecar", image: "myorg/sidecar:1" },
          ],
          initContainers: [{ name: "init", image: "myorg/init:1" }],
        },
      },
    },
  };
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

interface Case {
  name: string;
  /** kubectl's arguments for the workload `ref` (and its name). */
  args: (ref: string, name: string) => string[];
  /** The manager kubectl names in ?fieldManager=, which must end up owning the image. */
  manager: string;
  container?: "app" | "init";
  env?: Record<string, string>;
}

const SMP_IMAGE = JSON.stringify({
  spec: { template: { spec: { containers: [{ name: "app", image: PIN }] } } },
});
const JSON_IMAGE = JSON.stringify([
  { op: "replace", path: "/spec/template/spec/containers/0/image", value: PIN },
]);

const CASES: Case[] = [
  { name: "kubectl set image", args: (ref) => ["set", "image", ref, `app=${PIN}`], manager: "kubectl-set" },
  {
    name: "kubectl set image (init container)",
    args: (ref) => ["set", "image", ref, `init=${PIN}`],
    manager: "kubectl-set",
    container: "init",
  },
  {
    name: "kubectl patch (strategic)",
    args: (ref) => ["patch", ref, "-p", SMP_IMAGE],
    manager: "kubectl-patch",
  },
  {
    name: "kubectl patch --type=json",
    args: (ref) => ["patch", ref, "--type=json", "-p", JSON_IMAGE],
    manager: "kubectl-patch",
  },
  {
    name: "kubectl patch --field-manager=argocd-controller",
    args: (ref) => ["patch", ref, "--field-manager=argocd-controller", "-p", SMP_IMAGE],
    manager: "argocd-controller",
  },
  {
    name: "kubectl apply (client-side, --validate=false: the simulator serves no OpenAPI)",
    args: (_ref, name) => ["apply", "--validate=false", "-f", manifest(name, PIN)],
    manager: "kubectl-client-side-apply",
  },
  {
    name: "kubectl edit (--validate=false: no OpenAPI)",
    args: (ref) => ["edit", "--validate=false", ref],
    manager: "kubectl-edit",
    env: { KUBE_EDITOR: `sed -i -e 's#image: myorg/app:1#image: ${PIN}#'` },
  },
];

describe.skipIf(noKubectl)("kubectl's field managers take the image they changed", () => {
  for (const c of CASES) {
    test(`${c.name} → ${c.manager}`, async () => {
      const w = fresh();
      const container = c.container ?? "app";
      const list = container === "init" ? "initContainers" : "containers";
      sim.clearLog();
      const saved = { ...process.env };
      Object.assign(process.env, c.env ?? {});
      const r = await kubectl(...c.args(w.ref, w.name)).finally(() => {
        for (const k of Object.keys(c.env ?? {}))
          if (saved[k] === undefined) delete process.env[k];
          else process.env[k] = saved[k];
      });
      expect(r.err).not.toContain("error");
      expect(r.code).toBe(0);
      const writes = sim.log.filter((e) => e.method === "PATCH");
      expect(writes.map((e) => e.query.fieldManager)).toEqual([c.manager]);
      expect(imageOwners(w.mf(), container, list).map((o) => o.manager)).toEqual([c.manager]);
      // Helm keeps every image it rendered and nobody changed.
      const other = container === "init" ? "app" : "init";
      const otherList = other === "init" ? "initContainers" : "containers";
      expect(imageOwners(w.mf(), other, otherList).map((o) => o.manager)).toEqual(["helm"]);
      expect(imageOwners(w.mf(), "sidecar").map((o) => o.manager)).toEqual(["helm"]);
    });
  }

  test("kubectl patch with the image it already has: sent, but nothing moves", async () => {
    const w = fresh();
    const before = w.mf();
    sim.clearLog();
    const same = { spec: { template: { spec: { containers: [{ name: "app", image: "myorg/app:1" }] } } } };
    const r = await kubectl("patch", w.ref, "-p", JSON.stringify(same));
    expect(r.code).toBe(0);
    expect(r.out).toContain("(no change)");
    expect(sim.log.filter((e) => e.method === "PATCH").length).toBe(1);
    expect(w.mf()).toEqual(before);
  });

  test("kubectl annotate → kubectl-annotate owns the key; images stay Helm's", async () => {
    const w = fresh();
    expect((await kubectl("annotate", w.ref, "team.io/note=hi")).code).toBe(0);
    const e = w.mf().find((x: { manager: string }) => x.manager === "kubectl-annotate");
    expect(e.fieldsV1).toEqual({ "f:metadata": { "f:annotations": { "f:team.io/note": {} } } });
    expect(imageOwners(w.mf(), "app").map((o) => o.manager)).toEqual(["helm"]);
  });

  test("kubectl rollout restart → kubectl-rollout owns restartedAt, not the image", async () => {
    const w = fresh();
    expect((await kubectl("rollout", "restart", w.ref)).code).toBe(0);
    const e = w.mf().find((x: { manager: string }) => x.manager === "kubectl-rollout");
    expect(e.fieldsV1["f:spec"]["f:template"]["f:metadata"]["f:annotations"]).toEqual({
      ".": {},
      "f:kubectl.kubernetes.io/restartedAt": {},
    });
    expect(imageOwners(w.mf(), "app").map((o) => o.manager)).toEqual(["helm"]);
  });

  test("kubectl get -o json --show-managed-fields shows the entries the product reads", async () => {
    const w = fresh();
    expect((await kubectl("set", "image", w.ref, `app=${PIN}`)).code).toBe(0);
    const r = await kubectl("get", w.ref, "-o", "json", "--show-managed-fields");
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.out).metadata.managedFields;
    expect(shown).toEqual(w.mf());
    expect(imageOwners(shown, "app").map((o) => o.manager)).toEqual(["kubectl-set"]);
    const hidden = await kubectl("get", w.ref, "-o", "json");
    expect(JSON.parse(hidden.out).metadata.managedFields).toBeUndefined();
  });
});
