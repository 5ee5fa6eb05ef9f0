// The workload vocabulary, spelled once: the kinds image-refresh manages (one row each: where the
// API serves it, where its pod template is, which rollout rule judges it and how telemetry names
// it), how a workload is referred to (ref), keyed (id), named in a message, addressed in the API
// and labelled in telemetry; and the distinct target workloads of a configuration. No imports:
// config, kube, tick and commands all build on it. The chart's copy of each kind's group and
// resource (a block of charts/image-refresh/templates/_helpers.tpl) is generated from the table by
// `bun scripts/gen-chart-kinds.ts`; tests/chart/kinds.test.ts fails while it differs.

/**
 * Which of kubectl's `rollout status` viewers judges a kind (kubectl
 * pkg/polymorphichelpers/rollout_status.go); lib/kube/settled.ts holds one rule for each.
 */
export type StatusViewer = "DeploymentStatusViewer" | "DaemonSetStatusViewer" | "StatefulSetStatusViewer";

/** What image-refresh needs to know of one workload kind. */
export interface WorkloadKindRow {
  /** The API group and version that serve it. */
  group: string;
  version: string;
  /** The API resource: the path segment of its objects, and what RBAC grants. */
  plural: string;
  /** JSON pointer to the pod spec whose containers' images are patched. */
  podSpec: string;
  status: StatusViewer;
  /** kubectl's word for it in "Waiting for <noun> spec update to be observed...". */
  rolloutNoun: string;
  /** The OpenTelemetry attribute carrying an object's name (semantic conventions, k8s.*). */
  nameAttribute: string;
}

/** One row per kind: adding a kind is a row here, its status rule if it needs a new one, and tests. */
export const WORKLOAD_KIND_TABLE = {
  Deployment: {
    group: "apps",
    version: "v1",
    plural: "deployments",
    podSpec: "/spec/template/spec",
    status: "DeploymentStatusViewer",
    rolloutNoun: "deployment",
    nameAttribute: "k8s.deployment.name",
  },
  DaemonSet: {
    group: "apps",
    version: "v1",
    plural: "daemonsets",
    podSpec: "/spec/template/spec",
    status: "DaemonSetStatusViewer",
    rolloutNoun: "daemon set",
    nameAttribute: "k8s.daemonset.name",
  },
  StatefulSet: {
    group: "apps",
    version: "v1",
    plural: "statefulsets",
    podSpec: "/spec/template/spec",
    status: "StatefulSetStatusViewer",
    rolloutNoun: "statefulset",
    nameAttribute: "k8s.statefulset.name",
  },
} as const satisfies Record<string, WorkloadKindRow>;

export type WorkloadKind = keyof typeof WORKLOAD_KIND_TABLE;
export const WORKLOAD_KINDS = Object.keys(WORKLOAD_KIND_TABLE) as [WorkloadKind, ...WorkloadKind[]];

/** `apps/v1`: a kind's apiVersion, as an object and an Event's `regarding` carry it. */
export function apiVersionOf(kind: WorkloadKind): string {
  const { group, version } = WORKLOAD_KIND_TABLE[kind];
  return `${group}/${version}`;
}

/** `/apis/apps/v1`: where the API serves a kind (every kind here is in a named group, none in core). */
export function apiRootOf(kind: WorkloadKind): string {
  return `/apis/${apiVersionOf(kind)}`;
}

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

/** `k8s.deployment.name` etc., the OpenTelemetry attribute carrying the object's name. */
export function nameAttribute(kind: WorkloadKind): string {
  return WORKLOAD_KIND_TABLE[kind].nameAttribute;
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
