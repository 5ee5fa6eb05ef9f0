// Workload objects in the shape the real server stores them: defaulted as
// kubernetes pkg/apis/apps/v1/defaults.go does, validated where a client could trip, and
// with the per-kind generation rules of pkg/registry/apps/*/strategy.go.
import { createHash, randomUUID } from "node:crypto";
import { clone, deepEqual, isObject, type JsonObject } from "./patch.ts";
import { type FieldError, invalid, type Status } from "./status.ts";

export type WorkloadKind = "Deployment" | "DaemonSet" | "StatefulSet";

export interface ResourceInfo {
  kind: WorkloadKind;
  plural: string;
  singular: string;
  shortNames: string[];
  group: "apps";
}

/**
 * The simulated server's own table, not the product's (lib/workload.ts): a wrong row there must
 * meet a server that disagrees, as a real one would.
 */
export const RESOURCES: Record<WorkloadKind, ResourceInfo> = {
  Deployment: {
    kind: "Deployment",
    plural: "deployments",
    singular: "deployment",
    shortNames: ["deploy"],
    group: "apps",
  },
  DaemonSet: {
    kind: "DaemonSet",
    plural: "daemonsets",
    singular: "daemonset",
    shortNames: ["ds"],
    group: "apps",
  },
  StatefulSet: {
    kind: "StatefulSet",
    plural: "statefulsets",
    singular: "statefulset",
    shortNames: ["sts"],
    group: "apps",
  },
};

export const byPlural = (plural: string): ResourceInfo | undefined =>
  Object.values(RESOURCES).find((r) => r.plural === plural);

/** The server writes this on DaemonSets at create and on every template change (strategy.go). */
export const DS_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation";
export const DEPLOYMENT_REVISION = "deployment.kubernetes.io/revision";

export interface Container {
  name: string;
  image: string;
}

export interface NewWorkload {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  containers: Container[];
  initContainers?: Container[];
  replicas?: number;
  annotations?: Record<string, string>;
  updateStrategy?: "RollingUpdate" | "OnDelete";
}

/** A manifest as a user would apply it; the store runs it through `applyDefaults`. */
export function manifest(w: NewWorkload): JsonObject {
  const labels = { app: w.name };
  const podSpec: JsonObject = { containers: w.containers.map((c) => ({ ...c })) };
  if (w.initContainers?.length) podSpec.initContainers = w.initContainers.map((c) => ({ ...c }));
  const spec: JsonObject = {
    selector: { matchLabels: labels },
    template: { metadata: { labels }, spec: podSpec },
  };
  if (w.kind !== "DaemonSet") spec.replicas = w.replicas ?? 1;
  if (w.kind === "StatefulSet") spec.serviceName = w.name;
  if (w.updateStrategy && w.kind !== "Deployment") spec.updateStrategy = { type: w.updateStrategy };
  const metadata: JsonObject = { name: w.name, namespace: w.namespace, labels: { ...labels } };
  if (w.annotations && Object.keys(w.annotations).length) metadata.annotations = { ...w.annotations };
  return { apiVersion: "apps/v1", kind: w.kind, metadata, spec };
}

function defaultContainer(c: JsonObject): void {
  const image = String(c.image ?? "");
  const ref = image.split("@")[0] ?? "";
  const tag = ref.lastIndexOf(":") > ref.lastIndexOf("/") ? ref.slice(ref.lastIndexOf(":") + 1) : "";
  // core/v1 defaults: Always for :latest or an untagged, undigested image, else IfNotPresent.
  c.imagePullPolicy ??= !image.includes("@") && (tag === "" || tag === "latest") ? "Always" : "IfNotPresent";
  c.resources ??= {};
  c.terminationMessagePath ??= "/dev/termination-log";
  c.terminationMessagePolicy ??= "File";
}

function defaultPodSpec(spec: JsonObject): void {
  for (const list of ["initContainers", "containers"]) {
    const cs = spec[list];
    if (Array.isArray(cs)) for (const c of cs) if (isObject(c)) defaultContainer(c);
  }
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.securityContext ??= {};
  spec.schedulerName ??= "default-scheduler";
}

function defaultStrategy(kind: WorkloadKind, spec: JsonObject): void {
  if (kind === "Deployment") {
    spec.strategy ??= { type: "RollingUpdate" };
    const s = spec.strategy as JsonObject;
    if (s.type === "RollingUpdate")
      s.rollingUpdate = { maxUnavailable: "25%", maxSurge: "25%", ...(s.rollingUpdate as JsonObject) };
    spec.progressDeadlineSeconds ??= 600;
    return;
  }
  spec.updateStrategy ??= {};
  const u = spec.updateStrategy as JsonObject;
  // StatefulSet subtlety (kubernetes pkg/apis/apps/v1/defaults.go): only an omitted type gets a
  // rollingUpdate block, so `type: RollingUpdate` alone sends kubectl down its revision branch.
  if (kind === "StatefulSet" && !u.type) u.rollingUpdate ??= {};
  u.type ??= "RollingUpdate";
  if (u.type !== "RollingUpdate") return;
  if (kind === "DaemonSet")
    u.rollingUpdate = { maxUnavailable: 1, maxSurge: 0, ...(u.rollingUpdate as JsonObject) };
  else if (isObject(u.rollingUpdate)) u.rollingUpdate.partition ??= 0;
}

export function applyDefaults(obj: JsonObject): void {
  const kind = obj.kind as WorkloadKind;
  const spec = obj.spec as JsonObject;
  if (kind !== "DaemonSet") spec.replicas ??= 1;
  if (kind === "StatefulSet") {
    spec.podManagementPolicy ??= "OrderedReady";
    spec.persistentVolumeClaimRetentionPolicy ??= { whenDeleted: "Retain", whenScaled: "Retain" };
  }
  spec.revisionHistoryLimit ??= 10;
  defaultStrategy(kind, spec);
  const template = spec.template as JsonObject;
  template.metadata ??= {};
  // Go clients send the zero time as `creationTimestamp: null` (a real server serves it back so);
  // this simulator leaves it out everywhere, so a client's null must not read as a template change.
  const tm = template.metadata as JsonObject;
  if (tm.creationTimestamp === null) delete tm.creationTimestamp;
  defaultPodSpec(template.spec as JsonObject);
}

function containerErrors(spec: unknown, list: string): FieldError[] {
  const path = `spec.template.spec.${list}`;
  const cs = isObject(spec) ? spec[list] : undefined;
  if (cs === undefined && list === "initContainers") return [];
  if (!Array.isArray(cs) || (list === "containers" && cs.length === 0)) {
    return [{ type: "FieldValueRequired", field: path, detail: "Required value" }];
  }
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  cs.forEach((c, i) => {
    const name = isObject(c) ? c.name : undefined;
    if (typeof name !== "string" || name === "")
      errors.push({ type: "FieldValueRequired", field: `${path}[${i}].name`, detail: "Required value" });
    else if (seen.has(name))
      errors.push({
        type: "FieldValueDuplicate",
        field: `${path}[${i}].name`,
        detail: `Duplicate value: "${name}"`,
      });
    if (typeof name === "string") seen.add(name);
    const image = isObject(c) ? c.image : undefined;
    if (typeof image !== "string" || image.trim() === "")
      errors.push({ type: "FieldValueRequired", field: `${path}[${i}].image`, detail: "Required value" });
  });
  return errors;
}

/** The validation a pinning client can trip: a missing or empty image, a duplicate name. */
export function validate(obj: JsonObject): Status | undefined {
  const spec = obj.spec as JsonObject | undefined;
  const podSpec = isObject(spec?.template) ? spec.template.spec : undefined;
  const errors = [...containerErrors(podSpec, "initContainers"), ...containerErrors(podSpec, "containers")];
  const replicas = spec?.replicas;
  if (
    replicas !== undefined &&
    (typeof replicas !== "number" || replicas < 0 || !Number.isInteger(replicas))
  ) {
    errors.push({
      type: "FieldValueInvalid",
      field: "spec.replicas",
      detail: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`,
    });
  }
  if (errors.length === 0) return undefined;
  const meta = obj.metadata as JsonObject;
  return invalid(String(obj.kind), "apps", String(meta.name), errors);
}

/** Generation rules of PrepareForUpdate: spec always; top-level annotations for Deployments only. */
export function bumpsGeneration(kind: WorkloadKind, before: JsonObject, after: JsonObject): boolean {
  if (!deepEqual(before.spec, after.spec)) return true;
  if (kind !== "Deployment") return false;
  const a = (before.metadata as JsonObject).annotations ?? {};
  const b = (after.metadata as JsonObject).annotations ?? {};
  return !deepEqual(a, b);
}

const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/** JSON with object keys sorted, so that equal templates hash equally however a client ordered them. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (!isObject(v)) return JSON.stringify(v);
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
    .join(",")}}`;
}

/** Like the pod-template-hash: a short, stable, consonant-only hash of the pod template. */
export function templateHash(obj: JsonObject): string {
  const digest = createHash("sha256")
    .update(canonical((obj.spec as JsonObject).template))
    .digest();
  return Array.from(digest.subarray(0, 10), (b) => SAFE[b % SAFE.length]).join("");
}

export function newMetadata(meta: JsonObject, rv: string): JsonObject {
  const { name, namespace, labels, annotations, ...rest } = clone(meta);
  return {
    name: name ?? null,
    namespace: namespace ?? null,
    uid: randomUUID(),
    resourceVersion: rv,
    generation: 1,
    creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    ...(labels ? { labels } : {}),
    ...(annotations ? { annotations } : {}),
    ...rest,
  };
}
