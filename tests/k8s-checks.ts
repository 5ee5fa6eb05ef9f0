// Renders the kustomizations and derives what the RBAC and the deadline must be from the
// config.yaml inside the rendered ConfigMap, so the manifests and the config cannot drift apart.
import { join } from "node:path";
import { type Config, parseConfig } from "../lib/config.ts";
import type { CronJob, Role, RoleBinding } from "./k8s-schemas.ts";

export const K8S = join(import.meta.dir, "..", "k8s");
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

export function render(dir: string): K8sObject[] {
  const kubectl = Bun.which("kubectl");
  if (!kubectl)
    throw new Error(
      "Cannot render manifests: kubectl is not on PATH (CI installs Debian's kubernetes-client)",
    );
  const r = Bun.spawnSync([kubectl, "kustomize", join(K8S, dir)], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${r.stderr.toString()}`);
  // One parse per document, so a single-object render is still a list.
  return r.stdout
    .toString()
    .split(/^---$/m)
    .filter((d) => d.trim() !== "")
    .map((d) => Bun.YAML.parse(d) as K8sObject);
}

const RESOURCE = { Deployment: "deployments", DaemonSet: "daemonsets", StatefulSet: "statefulsets" } as const;

export function targetsOf(config: Config): string[] {
  const seen = new Set<string>();
  for (const image of config.images)
    if (image.pinned !== true)
      for (const t of image.targets) seen.add(`${t.namespace}|apps|${RESOURCE[t.kind]}|${t.name}`);
  return [...seen];
}

/**
 * Every permission as "namespace|group|resource|name|verb" ("*" for no resourceNames). Targets
 * need get/patch and, for the rollout wait, list/watch; the state object get/patch; Events are
 * created in the state object's namespace. A pinned image's targets are never read or patched,
 * so they get nothing (least privilege; unpinning changes config.yaml and the Roles together).
 */
export function expectedPermissions(config: Config): Set<string> {
  const out = new Set<string>();
  for (const t of targetsOf(config)) for (const v of ["get", "patch", "list", "watch"]) out.add(`${t}|${v}`);
  const s = config.state;
  for (const v of ["get", "patch"]) out.add(`${s.namespace}|apps|${RESOURCE[s.kind]}|${s.name}|${v}`);
  out.add(`${s.namespace}|events.k8s.io|events|*|create`);
  return out;
}

/** What the Roles bound to the service account actually grant, in the same notation. */
export function grantedPermissions(
  objects: K8sObject[],
  sa: { namespace: string; name: string },
): Set<string> {
  const roles = objects.filter((o) => o.kind === "Role") as unknown as Role[];
  const bindings = objects.filter((o) => o.kind === "RoleBinding") as unknown as RoleBinding[];
  const out = new Set<string>();
  for (const b of bindings) {
    const boundToUs = b.subjects.some(
      (s) => s.kind === "ServiceAccount" && s.name === sa.name && s.namespace === sa.namespace,
    );
    if (!boundToUs) continue;
    if (b.roleRef.kind !== "Role") throw new Error(`RoleBinding ${b.metadata.name} binds a ClusterRole`);
    const r = roles.find(
      (x) => x.metadata.name === b.roleRef.name && x.metadata.namespace === b.metadata.namespace,
    );
    if (!r) throw new Error(`RoleBinding ${b.metadata.namespace}/${b.metadata.name} names a missing Role`);
    for (const rule of r.rules)
      for (const g of rule.apiGroups)
        for (const res of rule.resources)
          for (const n of rule.resourceNames ?? ["*"])
            for (const v of rule.verbs) out.add(`${r.metadata.namespace}|${g}|${res}|${n}|${v}`);
  }
  return out;
}

/** The config.yaml inside the rendered ConfigMap, read by the product's own parser with the
 * container's environment, so an invalid shipped config fails here and not in the first tick. */
export function shippedConfig(objects: K8sObject[], env: { name: string; value?: string }[] = []): Config {
  const cms = objects.filter((o) => o.kind === "ConfigMap") as unknown as { data?: Record<string, string> }[];
  const text = cms.find((c) => c.data?.["config.yaml"] !== undefined)?.data?.["config.yaml"];
  if (text === undefined) throw new Error("no rendered ConfigMap carries config.yaml");
  return parseConfig(text, Object.fromEntries(env.map((e) => [e.name, e.value])), "the shipped config.yaml");
}

export function cronJobOf(objects: K8sObject[]): CronJob {
  const all = objects.filter((o) => o.kind === "CronJob");
  if (all.length !== 1) throw new Error(`expected one CronJob, rendered ${all.length}`);
  return all[0] as unknown as CronJob;
}

/** Startup, the state read, registry lookups, bookkeeping writes and the 5 s telemetry flush. */
export const DEADLINE_SLACK_SECONDS = 120;

export function minimumDeadline(config: Config): number {
  return (targetsOf(config).length * config.rolloutTimeoutMs) / 1000 + DEADLINE_SLACK_SECONDS;
}
