// What rendered manifests (`kubectl kustomize`) must grant and allow for a config: the Roles
// bound to the CronJob's service account give exactly the permissions the product uses, and the
// Job's activeDeadlineSeconds outlasts every rollout wait (groups side by side, see deadlineTerms). Shared by `image-refresh validate
// --manifests` and the tests of the shipped overlays, so that both apply one rule.
import * as z from "zod/mini";
import type { Config } from "./config.ts";
import { imageGroups } from "./groups.ts";
import { formatPath, parse } from "./issues.ts";
import { WORKLOAD_KIND_TABLE, type WorkloadKind } from "./workload.ts";

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

/** Startup, the state read, registry lookups, bookkeeping writes and the 5 s telemetry flush. */
export const DEADLINE_SLACK_SECONDS = 120;

const Meta = z.object({ name: z.string(), namespace: z.optional(z.string()) });
const ObjectHead = z.object({ apiVersion: z.string(), kind: z.string(), metadata: Meta });
const Rule = z.object({
  apiGroups: z._default(z.array(z.string()), []),
  resources: z._default(z.array(z.string()), []),
  resourceNames: z.optional(z.array(z.string())),
  verbs: z.array(z.string()),
});
const RoleSchema = z.object({ metadata: Meta, rules: z._default(z.nullable(z.array(Rule)), []) });
const Subject = z.object({ kind: z.string(), name: z.string(), namespace: z.optional(z.string()) });
const BindingSchema = z.object({
  metadata: Meta,
  subjects: z._default(z.nullable(z.array(Subject)), []),
  roleRef: z.object({ kind: z.enum(["Role", "ClusterRole"]), name: z.string() }),
});
const Container = z.object({
  name: z.optional(z.string()),
  image: z.optional(z.string()),
  env: z.optional(z.array(z.object({ name: z.string(), value: z.optional(z.string()) }))),
});
const CronJobSchema = z.object({
  metadata: Meta,
  spec: z.object({
    jobTemplate: z.object({
      spec: z.object({
        activeDeadlineSeconds: z.optional(z.int()),
        template: z.object({
          spec: z.object({ serviceAccountName: z.optional(z.string()), containers: z.array(Container) }),
        }),
      }),
    }),
  }),
});
export type CronJob = z.output<typeof CronJobSchema>;

export class ManifestError extends Error {
  override name = "ManifestError";
}

function parsed<S extends z.ZodMiniType>(schema: S, o: unknown, what: string): z.output<S> {
  const r = parse(schema, o);
  if (r.ok) return r.value;
  const fields = r.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("; ");
  throw new ManifestError(`${what} is not what Kubernetes expects (${fields})`);
}

/** The objects of a multi-document YAML stream; a `List` is unwrapped, empty documents skipped. */
export function parseManifests(text: string): K8sObject[] {
  const docs = text.split(/^---[ \t]*$/m).filter((d) => d.replace(/#.*$/gm, "").trim() !== "");
  const out: K8sObject[] = [];
  docs.forEach((doc, i) => {
    const value = Bun.YAML.parse(doc) as { kind?: unknown; items?: unknown[] } | null;
    const items = value?.kind === "List" && Array.isArray(value.items) ? value.items : [value];
    for (const item of items) {
      parsed(ObjectHead, item, `document ${i + 1}`); // checked, but kept whole: the other fields matter
      out.push(item as K8sObject);
    }
  });
  return out;
}

export function cronJobOf(objects: readonly K8sObject[]): CronJob {
  const all = objects.filter((o) => o.kind === "CronJob");
  if (all.length !== 1) throw new ManifestError(`expected one CronJob, the manifests hold ${all.length}`);
  return parsed(CronJobSchema, all[0], `CronJob ${all[0]?.metadata.name}`);
}

/** The CronJob's service account, where the product's requests come from. */
export function serviceAccountOf(job: CronJob): { namespace: string; name: string } {
  const spec = job.spec.jobTemplate.spec.template.spec;
  return { namespace: job.metadata.namespace ?? "default", name: spec.serviceAccountName ?? "default" };
}

/** The config.yaml carried by a rendered ConfigMap, or undefined when none carries one. */
export function configMapText(objects: readonly K8sObject[]): string | undefined {
  for (const o of objects) {
    const data = o.kind === "ConfigMap" ? (o.data as Record<string, unknown> | undefined) : undefined;
    if (typeof data?.["config.yaml"] === "string") return data["config.yaml"];
  }
  return undefined;
}

/** `namespace|group|resource|name`, the notation of every permission below (expectedPermissions), for one workload. */
function workloadResource(w: { kind: WorkloadKind; namespace: string; name: string }): string {
  const { group, plural } = WORKLOAD_KIND_TABLE[w.kind];
  return `${w.namespace}|${group}|${plural}|${w.name}`;
}

/** `namespace|group|resource|name` of every workload the product reads and patches (pinned images' excluded). */
export function targetsOf(config: Config): string[] {
  const seen = new Set<string>();
  for (const image of config.images)
    if (!image.pinned) for (const t of image.targets) seen.add(workloadResource(t));
  return [...seen];
}

/**
 * Every permission as "namespace|group|resource|name|verb" ("*" for no resourceNames). Targets
 * need get/patch and, for the rollout wait, list/watch; Events are created in the targets'
 * namespaces (they are posted on the workloads they concern), and their pods are listed and
 * watched there (by label selector, so not limited by name) to verify a rollout and to see a
 * regression. The store is a ConfigMap in the
 * store's namespace: `create` there (RBAC cannot limit a create by name: its URL names no
 * object), `get`/`patch` on its name only. The legacy `state` workload, while configured, is
 * read and has its old annotations removed: get/patch. A pinned image's targets are never read
 * or patched, so they get nothing (least privilege; unpinning changes config.yaml and the Roles
 * together).
 */
export function expectedPermissions(config: Config, storeNamespace = config.store.namespace): Set<string> {
  if (!storeNamespace) throw new ManifestError("the store's namespace is unknown: set store.namespace");
  const out = new Set<string>();
  for (const t of targetsOf(config)) {
    for (const v of ["get", "patch", "list", "watch"]) out.add(`${t}|${v}`);
    out.add(`${t.split("|")[0]}|events.k8s.io|events|*|create`);
    for (const v of ["list", "watch"]) out.add(`${t.split("|")[0]}||pods|*|${v}`);
  }
  const s = config.state;
  if (s) for (const v of ["get", "patch"]) out.add(`${workloadResource(s)}|${v}`);
  out.add(`${storeNamespace}||configmaps|*|create`);
  for (const v of ["get", "patch"]) out.add(`${storeNamespace}||configmaps|${config.store.name}|${v}`);
  return out;
}

/**
 * What the bindings of the service account grant, in the same notation: a RoleBinding grants its
 * Role's or ClusterRole's rules in its namespace, a ClusterRoleBinding in every namespace ("*").
 */
export function grantedPermissions(
  objects: readonly K8sObject[],
  sa: { namespace: string; name: string },
): Set<string> {
  const out = new Set<string>();
  for (const o of objects) {
    if (o.kind !== "RoleBinding" && o.kind !== "ClusterRoleBinding") continue;
    const b = parsed(BindingSchema, o, `${o.kind} ${o.metadata.name}`);
    const ours = (b.subjects ?? []).some(
      (s) => s.kind === "ServiceAccount" && s.name === sa.name && (s.namespace ?? "") === sa.namespace,
    );
    if (!ours) continue;
    const ns = o.kind === "RoleBinding" ? (b.metadata.namespace ?? "default") : "*";
    for (const rule of rulesOf(objects, b.roleRef, ns))
      for (const g of rule.apiGroups)
        for (const res of rule.resources)
          for (const n of rule.resourceNames?.length ? rule.resourceNames : ["*"])
            for (const v of rule.verbs) out.add(`${ns}|${g}|${res}|${n}|${v}`);
  }
  return out;
}

function rulesOf(objects: readonly K8sObject[], ref: { kind: string; name: string }, ns: string) {
  const want = ref.kind === "Role" ? ns : undefined;
  const role = objects.find(
    (o) => o.kind === ref.kind && o.metadata.name === ref.name && o.metadata.namespace === want,
  );
  if (!role)
    throw new ManifestError(
      `a binding names ${ref.kind} ${want ? `${want}/` : ""}${ref.name}, which the manifests do not hold`,
    );
  return parsed(RoleSchema, role, `${ref.kind} ${ref.name}`).rules ?? [];
}

/**
 * With onFailure: revert every patched workload may be waited for twice: forward, and back. Each
 * wait is the rollout's own (up to rolloutTimeout) and then its verification (verifyFor).
 */
function waitsPerWorkload(config: Config): number {
  return config.onFailure === "revert" ? 2 : 1;
}

/**
 * What a tick's rollouts can take at most, in rounds of waits. Groups of images that share no
 * workload roll out side by side, `parallelism` at a time, each the next as one ends; inside a
 * group one workload at a time. So no tick needs more than ceil(groups / parallelism) rounds of
 * the longest group: a lane that takes up a group later than that found every other lane busy
 * through each earlier round, which would be more groups than there are.
 */
export function deadlineTerms(config: Config): {
  groups: number;
  longest: number;
  rounds: number;
  waits: number;
} {
  const groups = imageGroups(config.images.filter((img) => !img.pinned));
  const longest = Math.max(0, ...groups.map((g) => g.workloads.length));
  const rounds = Math.ceil(groups.length / config.parallelism);
  return { groups: groups.length, longest, rounds, waits: waitsPerWorkload(config) };
}

export function minimumDeadlineSeconds(config: Config): number {
  const t = deadlineTerms(config);
  const waits = t.rounds * t.longest * t.waits;
  return (waits * (config.rolloutTimeoutMs + config.verifyForMs)) / 1000 + DEADLINE_SLACK_SECONDS;
}

/** The rule as a sentence, with this config's figures: what a too-short deadline is told. */
export function deadlineRule(config: Config): string {
  const t = deadlineTerms(config);
  const revert = t.waits === 2 ? "2 waits (onFailure: revert) × " : "";
  return `ceil(${t.groups} groups / parallelism ${config.parallelism}) × ${t.longest} workloads (the longest group) × ${revert}(rolloutTimeout ${config.rolloutTimeoutMs / 1000}s + verifyFor ${config.verifyForMs / 1000}s) + ${DEADLINE_SLACK_SECONDS}s = ${minimumDeadlineSeconds(config)}s`;
}

/** `get, patch on deployments.apps/api in namespace apps`, one line per object. */
function byObject(permissions: Iterable<string>): string[] {
  const verbs = new Map<string, string[]>();
  for (const p of permissions) {
    const cut = p.lastIndexOf("|");
    const key = p.slice(0, cut);
    verbs.set(key, [...(verbs.get(key) ?? []), p.slice(cut + 1)]);
  }
  return [...verbs]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, vs]) => {
      const [ns, group, resource, name] = key.split("|");
      const what = `${group ? `${resource}.${group}` : resource}${name === "*" ? "" : `/${name}`}`;
      return `${vs.sort().join(", ")} on ${what} in ${ns === "*" ? "every namespace" : `namespace ${ns}`}`;
    });
}

/** The tag the kustomize base and the chart ship so that a forgotten image fails loudly; no registry serves it. */
export const PLACEHOLDER_TAG = "set-me";

/** An overlay that never set its own image would fail at pull time on every tick: say so now. */
function placeholderImages(job: CronJob): string[] {
  return job.spec.jobTemplate.spec.template.spec.containers.flatMap((c) =>
    c.image?.endsWith(`:${PLACEHOLDER_TAG}`)
      ? [
          `CronJob ${job.metadata.name}: container ${c.name ?? "(unnamed)"} still runs the placeholder image ${c.image}; set your own build in the overlay's images: (newName, newTag or digest)`,
        ]
      : [],
  );
}

/** Every way the manifests fail the config; empty when they fit it exactly. */
export function manifestProblems(config: Config, objects: readonly K8sObject[]): string[] {
  const job = cronJobOf(objects);
  const sa = serviceAccountOf(job);
  const granted = grantedPermissions(objects, sa);
  // Unset in the config, the store lives in the pod's namespace: the CronJob's.
  const expected = expectedPermissions(config, config.store.namespace ?? sa.namespace);
  const problems: string[] = [];
  for (const line of byObject([...expected].filter((p) => !granted.has(p))))
    problems.push(`RBAC does not grant ${line}`);
  for (const line of byObject([...granted].filter((p) => !expected.has(p))))
    problems.push(`RBAC grants more than this config needs: ${line}`);
  problems.push(...placeholderImages(job));
  const deadline = job.spec.jobTemplate.spec.activeDeadlineSeconds;
  const needed = minimumDeadlineSeconds(config);
  if (deadline === undefined || deadline < needed)
    problems.push(
      `CronJob ${job.metadata.name}: activeDeadlineSeconds ${deadline ?? "(unset)"} does not cover ${deadlineRule(config)}`,
    );
  return problems;
}
