// The workload vocabulary, spelled once: the kinds image-refresh manages, how a workload is
// referred to (ref), keyed (id), named in a message, addressed in the API (plural) and labelled
// in telemetry; and the distinct target workloads of a configuration. No imports: config, kube,
// tick and commands all build on it.

export const WORKLOAD_KINDS = ["Deployment", "DaemonSet", "StatefulSet"] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

export interface WorkloadRef {
  kind: WorkloadKind;
  namespace: string;
  name: string;
}

/** `Deployment/apps/api`: the key of a workload in maps and observations. */
export function workloadId(w: WorkloadRef): string {
  return `${w.kind}/${w.namespace}/${w.name}`;
}

/**
 * `Deployment apps/api`: the one spelling of a workload in every log line, error and Event note,
 * from the kube client and the tick alike. The Kind as the object spells it: what the operator
 * wrote in the config's targets (`kind: Deployment`), what `kubectl get -o yaml` and an Event's
 * `regarding.kind` show, and unlike a lowercase word it cannot be mistaken for the API's resource
 * name that the server's own messages quote beside it (`deployments.apps "api" not found`).
 */
export function describeWorkload(w: WorkloadRef): string {
  return `${w.kind} ${w.namespace}/${w.name}`;
}

/** The store (or any ConfigMap) the same way: `ConfigMap image-refresh/image-refresh-state`. */
export function describeConfigMap(ref: { namespace: string; name: string }): string {
  return `ConfigMap ${ref.namespace}/${ref.name}`;
}

/** The API resource (apps/v1) of each kind. */
export const PLURAL: Record<WorkloadKind, string> = {
  Deployment: "deployments",
  DaemonSet: "daemonsets",
  StatefulSet: "statefulsets",
};

/** `k8s.deployment.name` etc., the OpenTelemetry attribute carrying the object's name. */
export function nameAttribute(kind: WorkloadKind): string {
  return `k8s.${kind.toLowerCase()}.name`;
}

/** The OpenTelemetry attributes that name a workload: its namespace and its kind's name attribute. */
export function workloadAttributes(w: WorkloadRef): Record<string, string> {
  return { "k8s.namespace.name": w.namespace, [nameAttribute(w.kind)]: w.name };
}

/** Just the reference of a workload or target (a target also names a container). */
export function refOf(w: WorkloadRef): WorkloadRef {
  return { kind: w.kind, namespace: w.namespace, name: w.name };
}

/** The legacy state object's reference, while the config names one (the migration reads it). */
export function stateRef(c: { state?: WorkloadRef }): WorkloadRef | undefined {
  return c.state ? refOf(c.state) : undefined;
}

interface HasTargets {
  images: ReadonlyArray<{ pinned?: boolean; targets: ReadonlyArray<WorkloadRef> }>;
}

/**
 * Each target workload once, in the order it first appears in the config. `unpinned`: only the
 * targets of images that are not pinned (the ones a tick reads and may patch).
 */
export function distinctTargets(config: HasTargets, which: "all" | "unpinned" = "all"): WorkloadRef[] {
  const refs = new Map<string, WorkloadRef>();
  for (const img of config.images) {
    if (which === "unpinned" && img.pinned) continue;
    for (const t of img.targets) if (!refs.has(workloadId(t))) refs.set(workloadId(t), refOf(t));
  }
  return [...refs.values()];
}
