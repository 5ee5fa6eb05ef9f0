// The pods of the simulated workloads, as a kubelet and the workload controllers leave them:
// labelled with the revision they belong to (pod-template-hash for a Deployment's ReplicaSet,
// controller-revision-hash for a DaemonSet or StatefulSet), with the status a real kubelet
// writes for each way a build behaves: Ready; starting; running but never Ready; crash-looping
// (restartCount growing, waiting in CrashLoopBackOff); failing to pull. Read-only over the API,
// like the ReplicaSets: the controller decides what each pod shows, this file renders it.
import { createHash } from "node:crypto";
import type { WorkloadKind } from "./objects.ts";
import { clone, deepEqual, type JsonObject } from "./patch.ts";

/**
 * What a pod's containers show. `finishedAt`: when the last restart's container terminated (its
 * lastState.terminated.finishedAt); the pod's start when not given.
 */
export type PodHealth =
  | { kind: "ready"; restarts: number; finishedAt?: string }
  | { kind: "starting" }
  | { kind: "unready"; restarts: number; finishedAt?: string }
  | { kind: "crashing"; restarts: number }
  | { kind: "pull"; backoff: boolean };

export interface DesiredPod {
  name: string;
  hash: string;
  nodeName: string;
  containers: Array<{ name: string; image: string }>;
  health: PodHealth;
}

export interface PodOwner {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  labels: JsonObject;
}

/** What the store lets this file do: pods share its resourceVersions and its watches. */
export interface PodStore {
  get(kind: "Pod", ns: string, name: string): JsonObject | undefined;
  put(obj: JsonObject): void;
  remove(kind: "Pod", ns: string, name: string): void;
}

export const POD_TEMPLATE_HASH = "pod-template-hash";
export const CONTROLLER_REVISION_HASH = "controller-revision-hash";

const SAFE = "bcdfghjklmnpqrstvwxz2456789";
const seconds = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** A stable five-letter suffix, like the generateName suffix of a real pod. */
export function podSuffix(seed: string): string {
  const d = createHash("sha256").update(seed).digest();
  return Array.from(d.subarray(0, 5), (b) => SAFE[b % SAFE.length]).join("");
}

export function revisionLabel(kind: WorkloadKind): string {
  return kind === "Deployment" ? POD_TEMPLATE_HASH : CONTROLLER_REVISION_HASH;
}

const condition = (type: string, ok: boolean, reason?: string, message?: string) => ({
  type,
  status: ok ? "True" : "False",
  lastProbeTime: null,
  ...(reason ? { reason } : {}),
  ...(message ? { message } : {}),
});

function containerState(h: PodHealth, pod: string, c: string, startedAt: string): JsonObject {
  switch (h.kind) {
    case "ready":
    case "unready":
      // A restarted container runs since its restart.
      return { running: { startedAt: h.finishedAt ?? startedAt } };
    case "starting":
      return { waiting: { reason: "ContainerCreating" } };
    case "crashing":
      return {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off 10s restarting failed container=${c} pod=${pod}`,
        },
      };
    case "pull":
      return h.backoff
        ? { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } }
        : { waiting: { reason: "ErrImagePull", message: "failed to pull and unpack image: not found" } };
  }
}

/** The status a kubelet writes for a pod whose containers show `h`. */
export function renderPodStatus(p: DesiredPod, startedAt: string): JsonObject {
  const h = p.health;
  const ready = h.kind === "ready";
  const running = h.kind !== "starting" && h.kind !== "pull";
  const restarts = "restarts" in h ? h.restarts : 0;
  const finishedAt = "finishedAt" in h && h.finishedAt ? h.finishedAt : startedAt;
  const unready = p.containers.map((c) => c.name).join(" ");
  const why = ready ? undefined : "ContainersNotReady";
  const msg = ready ? undefined : `containers with unready status: [${unready}]`;
  return {
    phase: running ? "Running" : "Pending",
    conditions: [
      condition("PodReadyToStartContainers", true),
      condition("Initialized", true),
      condition("Ready", ready, why, msg),
      condition("ContainersReady", ready, why, msg),
      condition("PodScheduled", true),
    ],
    hostIP: "10.0.0.1",
    startTime: startedAt,
    containerStatuses: p.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: "",
      ready,
      started: h.kind === "ready" || h.kind === "unready",
      restartCount: restarts,
      state: containerState(h, p.name, c.name, startedAt),
      ...(restarts > 0
        ? { lastState: { terminated: { exitCode: 1, reason: "Error", startedAt, finishedAt } } }
        : {}),
    })),
  };
}

function podObject(owner: PodOwner, p: DesiredPod, created: string): JsonObject {
  const label = revisionLabel(owner.kind);
  const ownerName = owner.kind === "Deployment" ? `${owner.name}-${p.hash}` : owner.name;
  const ownerKind = owner.kind === "Deployment" ? "ReplicaSet" : owner.kind;
  return {
    kind: "Pod",
    apiVersion: "v1",
    metadata: {
      name: p.name,
      namespace: owner.namespace,
      creationTimestamp: created,
      labels: { ...clone(owner.labels), [label]: p.hash },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: ownerKind,
          name: ownerName,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      nodeName: p.nodeName,
      containers: p.containers.map((c) => ({ ...c })),
      restartPolicy: "Always",
    },
    status: renderPodStatus(p, created),
  };
}

/**
 * Brings one workload's pods to `desired`: a pod of a new revision is a new pod (a new uid), a
 * pod whose status changed is written once, a pod no longer wanted is deleted.
 */
export function syncPods(
  store: PodStore,
  owner: PodOwner,
  before: string[],
  desired: DesiredPod[],
): string[] {
  const label = revisionLabel(owner.kind);
  const wanted = new Set(desired.map((p) => p.name));
  for (const name of before) if (!wanted.has(name)) store.remove("Pod", owner.namespace, name);
  for (const p of desired) {
    const old = store.get("Pod", owner.namespace, p.name);
    const oldLabels = (old?.metadata as JsonObject | undefined)?.labels as JsonObject | undefined;
    if (old && oldLabels?.[label] !== p.hash) store.remove("Pod", owner.namespace, p.name);
    const kept = old && oldLabels?.[label] === p.hash ? old : undefined;
    const created = kept ? String((kept.metadata as JsonObject).creationTimestamp) : seconds(new Date());
    const next = podObject(owner, p, created);
    if (kept) {
      next.metadata = {
        ...(kept.metadata as JsonObject),
        labels: (next.metadata as JsonObject).labels ?? {},
      };
      if (deepEqual(kept.status, next.status) && deepEqual(kept.spec, next.spec)) continue;
    }
    store.put(next);
  }
  return desired.map((p) => p.name);
}
