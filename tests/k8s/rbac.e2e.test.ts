// The shipped Roles, enforced: each kustomization is rendered, the rules bound to the CronJob's
// service account are loaded into the simulated API server, and the compiled binary runs its
// whole story (first observation, a refresh that lists and watches, skips up to a freeze, a
// flapping workload until lockout, status, rearm) with the CronJob's own environment. No request may be forbidden and
// every outcome must be the one the same story has without RBAC. tests/k8s/manifests.test.ts compares the
// Roles with a list of expected permissions; this proves the list is what the product needs.
import { afterEach, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import type { Config } from "../../lib/config.ts";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import type { AddWorkload, RbacRule, WorkloadKind } from "../../sim/apiserver/index.ts";
import { describeWith, needTool } from "../support/tools.ts";
import { startWorld, type World, writeStory } from "../support/world.ts";
import { cronJobOf, type K8sObject, render, shippedConfig } from "./checks.ts";

// Every block renders the manifests with kubectl while tests are collected.
const describe = describeWith(needTool("kubectl", { apt: "kubernetes-client" }));

const KUSTOMIZATIONS = ["base", "examples/two-deployments-and-daemonset"];

interface Binding {
  metadata: { name: string; namespace?: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
  roleRef: { kind: string; name: string };
}
type RoleLike = K8sObject & { rules?: Omit<RbacRule, "namespace">[] };

/** The rules the RBAC authorizer would find for the service account: Roles and ClusterRoles
 * through RoleBindings (in the binding's namespace), ClusterRoles through ClusterRoleBindings. */
function boundRules(objects: K8sObject[], sa: { namespace: string; name: string }): RbacRule[] {
  const find = (kind: string, name: string, namespace?: string) => {
    const r = objects.find(
      (o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace,
    ) as RoleLike | undefined;
    if (!r) throw new Error(`a binding names ${kind} ${namespace ?? ""}/${name}, which is not rendered`);
    return r.rules ?? [];
  };
  const out: RbacRule[] = [];
  for (const o of objects) {
    if (o.kind !== "RoleBinding" && o.kind !== "ClusterRoleBinding") continue;
    const b = o as unknown as Binding;
    const ours = (b.subjects ?? []).some(
      (s) => s.kind === "ServiceAccount" && s.name === sa.name && s.namespace === sa.namespace,
    );
    if (!ours) continue;
    const ns = o.kind === "RoleBinding" ? b.metadata.namespace : undefined;
    const rules = find(b.roleRef.kind, b.roleRef.name, b.roleRef.kind === "Role" ? ns : undefined);
    for (const r of rules) out.push({ ...r, ...(ns === undefined ? {} : { namespace: ns }) });
  }
  return out;
}

interface Shipped {
  config: Config;
  raw: Record<string, unknown>;
  rules: RbacRule[];
  user: string;
  env: Record<string, string>;
}

function shipped(dir: string): Shipped {
  const objects = render(dir);
  const job = cronJobOf(objects);
  const pod = job.spec.jobTemplate.spec.template.spec;
  const sa = { namespace: job.metadata.namespace ?? "default", name: pod.serviceAccountName ?? "default" };
  const envList = pod.containers[0]?.env ?? [];
  const cm = objects.find((o) => o.kind === "ConfigMap") as unknown as { data: Record<string, string> };
  // The path is passed as --config; the timeouts are shortened below (a 10m wait per flap, a 2m verification).
  const dropped = new Set(["IMAGE_REFRESH_CONFIG", "ROLLOUT_TIMEOUT", "REQUEST_TIMEOUT"]);
  return {
    config: shippedConfig(objects, envList),
    raw: Bun.YAML.parse(cm.data["config.yaml"] ?? "") as Record<string, unknown>,
    rules: boundRules(objects, sa),
    user: `system:serviceaccount:${sa.namespace}:${sa.name}`,
    env: Object.fromEntries(envList.filter((e) => !dropped.has(e.name)).map((e) => [e.name, e.value ?? ""])),
  };
}

/** A cluster and registry holding what the shipped config names, and the config pointed at them. */
async function worldFor(s: Shipped, rules?: RbacRule[]): Promise<World> {
  const w = await startWorld();
  const { config } = s;
  const wanted = new Map<string, AddWorkload>();
  const workload = (kind: WorkloadKind, namespace: string, name: string) => {
    const key = `${kind}/${namespace}/${name}`;
    if (!wanted.has(key)) wanted.set(key, { kind, namespace, name, replicas: 2, containers: [] });
    return wanted.get(key) as AddWorkload;
  };
  // The targets name the floating tag on the world's registry, as a fresh Helm install renders them.
  for (const image of config.images)
    for (const t of image.targets)
      workload(t.kind, t.namespace, t.name).containers.push({
        name: t.container,
        image: `${w.registry.host}/${image.repository}:${config.tag}`,
      });
  if (config.state) {
    const state = workload(config.state.kind, config.state.namespace, config.state.name);
    if (state.containers.length === 0) state.containers.push({ name: "main", image: "busybox:1" });
  }
  for (const wl of wanted.values()) {
    if (!w.api.getObject(wl.kind, wl.namespace, wl.name)) w.api.addWorkload(wl);
    else {
      // A workload of the seeded scenario: its configured containers move onto the tag too.
      for (const c of wl.containers)
        w.api.setImage(wl.kind, wl.namespace, wl.name, c.name, c.image, { manager: "helm" });
      await waitFor(w.api, wl.kind, wl.namespace, wl.name, settled);
    }
  }
  for (const image of config.images) if (image.pinned !== true) w.registry.push(image.repository, config.tag);
  const registry = { ...(s.raw.registry as object), host: w.registry.host };
  const file = { ...s.raw, registry, rolloutTimeout: "2s", requestTimeout: "2s", verifyFor: "200ms" };
  writeFileSync(w.configPath, JSON.stringify(file, null, 2));
  if (rules) w.api.setRbac({ user: s.user, rules });
  return w;
}

interface Step {
  step: string;
  code: number;
  outcome?: string;
  reason?: string;
  writes: string[];
}

/** The outcome line of a JSON log, if the command logged one. */
function outcomeOf(stderr: string): { outcome?: string; reason?: string } {
  const lines = stderr.split("\n").filter((l) => l.startsWith("{"));
  const last = lines.map((l) => JSON.parse(l)).findLast((o) => o.outcome !== undefined);
  return last ? { outcome: last.outcome, reason: last.reason } : {};
}

async function step(w: World, s: Shipped, name: string, args: string[] = ["tick"]): Promise<Step> {
  const before = w.api.log.length;
  const r = await w.run(args, s.env);
  const writes = writeStory({ ...w.api, log: w.api.log.slice(before) });
  return { step: name, code: r.code, ...outcomeOf(r.stderr), writes };
}

/** The flapping target: the last one configured (for the base, the state object itself). */
function flapTarget(config: Config) {
  const image = config.images.findLast((i) => i.pinned !== true);
  const t = image?.targets.at(-1);
  if (!image || !t) throw new Error("the shipped config has no image to refresh");
  return { repository: image.repository, kind: t.kind, namespace: t.namespace, name: t.name };
}

/**
 * Every build of the flapping image fails its rollout until someone repairs the workload, so
 * each tick starts settled (a state object that stays broken would be skipped, not retried)
 * and counts one more failed attempt, until the lockout holds the refresh back.
 */
async function story(w: World, s: Shipped): Promise<Step[]> {
  const { config } = s;
  const steps = [await step(w, s, "first observation")];
  for (const image of config.images) if (image.pinned !== true) w.registry.push(image.repository, config.tag);
  steps.push(await step(w, s, "refresh"));
  // An unsettled target: counted skips (streak writes) up to the freeze and its Event.
  const st = config.images[0]?.targets[0] as Config["images"][number]["targets"][number];
  w.api.setMode(st.kind, st.namespace, st.name, "unsettled");
  for (let n = 1; n <= config.maxSkipTicks; n++) steps.push(await step(w, s, `unsettled ${n}`));
  w.api.setMode(st.kind, st.namespace, st.name, "healthy");
  await waitFor(w.api, st.kind, st.namespace, st.name, settled);
  const f = flapTarget(config);
  for (let n = 1; n <= config.maxRefreshAttempts; n++) {
    w.registry.push(f.repository, config.tag);
    w.api.setMode(f.kind, f.namespace, f.name, "flap");
    steps.push(await step(w, s, `flap ${n}`));
    w.api.setMode(f.kind, f.namespace, f.name, "healthy");
    await waitFor(w.api, f.kind, f.namespace, f.name, settled);
  }
  steps.push(await step(w, s, "lockout"));
  steps.push(await step(w, s, "status", ["status"]));
  steps.push(await step(w, s, "rearm", ["rearm"]));
  steps.push(await step(w, s, "refresh after rearm"));
  return steps;
}

let worlds: World[] = [];
afterEach(async () => {
  await Promise.all(worlds.map((w) => w.stop()));
  worlds = [];
});
async function started(s: Shipped, rules?: RbacRule[]): Promise<World> {
  const w = await worldFor(s, rules);
  worlds.push(w);
  return w;
}

for (const dir of KUSTOMIZATIONS) {
  describe(`k8s/${dir} under RBAC`, () => {
    const s = shipped(dir);

    test("the whole story runs with no request forbidden and every outcome as without RBAC", async () => {
      const free = await story(await started(s), s);
      const w = await started(s, s.rules);
      const enforced = await story(w, s);
      expect(enforced).toEqual(free);
      expect(enforced.map((x) => [x.step, x.code, x.outcome])).toEqual([
        ["first observation", 0, "recorded"],
        ["refresh", 0, "refreshed"],
        ...Array.from({ length: s.config.maxSkipTicks - 1 }, (_, i) => [`unsettled ${i + 1}`, 0, "skipped"]),
        [`unsettled ${s.config.maxSkipTicks}`, 1, "frozen"],
        ...Array.from({ length: s.config.maxRefreshAttempts - 1 }, (_, i) => [`flap ${i + 1}`, 1, "failed"]),
        // The failure that reaches the maximum announces the lockout on its own tick.
        [`flap ${s.config.maxRefreshAttempts}`, 1, "locked_out"],
        // A lockout fails the Job; status, usable as a check, says so too.
        ["lockout", 1, "locked_out"],
        ["status", 1, undefined],
        ["rearm", 0, undefined],
        ["refresh after rearm", 0, "refreshed"],
      ]);
      expect(w.api.log.filter((e) => e.status === 403 || e.status === 401)).toEqual([]);
      // The rollout waits really listed and watched by name, and Events were really posted.
      const q = w.api.log.map((e) => e.query);
      expect(q.some((x) => x.fieldSelector?.startsWith("metadata.name=") && !x.watch)).toBe(true);
      expect(q.some((x) => x.fieldSelector?.startsWith("metadata.name=") && x.watch === "1")).toBe(true);
      expect(new Set(w.api.events.map((e) => e.type))).toEqual(new Set(["Normal", "Warning"]));
    }, 120_000);
  });
}

describe("a Role missing a verb the rollout wait needs", () => {
  const s = shipped("base");
  // The base's one target, Deployment default/app.
  const state = s.config.images[0]?.targets[0] as { namespace: string; name: string };
  for (const verb of ["list", "watch"]) {
    test(`without "${verb}" the refresh fails with the API's Forbidden message and exit 1`, async () => {
      const rules = s.rules.map((r) => ({ ...r, verbs: r.verbs.filter((v) => v !== verb) }));
      const w = await started(s, rules);
      expect((await w.run(["tick"], s.env)).code).toBe(0); // first observation needs no list/watch
      for (const image of s.config.images) w.registry.push(image.repository, s.config.tag);
      const r = await w.run(["tick"], s.env);
      expect(r.code).toBe(1);
      expect(outcomeOf(r.stderr).outcome).toBe("failed");
      const message = `deployments.apps "${state.name}" is forbidden: User "${s.user}" cannot ${verb} resource "deployments" in API group "apps" in the namespace "${state.namespace}"`;
      // The tick's error line carries the API's own message, not a paraphrase of it.
      const errors = r.stderr
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .filter((o) => o.level === "error");
      expect(
        errors
          .map((o) => o.msg)
          .filter((m: string) =>
            m.includes(
              `Cannot GET Deployment ${state.namespace}/${state.name} (${verb}): Forbidden (403) ${message}`,
            ),
          ),
      ).toHaveLength(1);
      expect(w.api.log.filter((e) => e.status === 403).length).toBeGreaterThan(0);
    }, 60_000);
  }
});
