// The ReplicaSets the deployment controller keeps, faithful where `kubectl rollout undo` and
// `rollout history` read them (kubectl polymorphichelpers/rollback.go, deployment/util): one per
// distinct pod template, labelled with pod-template-hash, controlled by the Deployment (an
// ownerReference with its uid), carrying the Deployment's annotations as they were while it was
// the newest and `deployment.kubernetes.io/revision`. A template that comes back reuses its
// ReplicaSet, which takes the new revision. Read-only over the API; no pods, no own controller.
import { randomUUID } from "node:crypto";
import { DEPLOYMENT_REVISION } from "./objects.ts";
import { clone, deepEqual, type Json, type JsonObject } from "./patch.ts";

export const HASH_LABEL = "pod-template-hash";
/** deployment/util annotationsToSkip: never copied from a Deployment to its ReplicaSets. */
const NOT_COPIED = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  DEPLOYMENT_REVISION,
  "deployment.kubernetes.io/revision-history",
  "deployment.kubernetes.io/desired-replicas",
  "deployment.kubernetes.io/max-replicas",
  "deprecated.deployment.rollback.to",
]);

const meta = (o: JsonObject): JsonObject => o.metadata as JsonObject;
const spec = (o: JsonObject): JsonObject => o.spec as JsonObject;
const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, "Z");

function withoutHash(template: Json | undefined): JsonObject {
  const t = clone((template ?? {}) as JsonObject);
  const labels = (t.metadata as JsonObject | undefined)?.labels as JsonObject | undefined;
  if (labels) delete labels[HASH_LABEL];
  return t;
}

/** What SetNewReplicaSetAnnotations writes: the Deployment's own, the revision, the replica bounds. */
function annotationsFor(d: JsonObject, revision: string): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries((meta(d).annotations ?? {}) as JsonObject))
    if (!NOT_COPIED.has(k)) out[k] = v;
  const replicas = Number(spec(d).replicas ?? 1);
  out[DEPLOYMENT_REVISION] = revision;
  out["deployment.kubernetes.io/desired-replicas"] = String(replicas);
  out["deployment.kubernetes.io/max-replicas"] = String(replicas + Math.ceil(replicas / 4)); // maxSurge 25%
  return out;
}

function newReplicaSet(d: JsonObject, hash: string): JsonObject {
  const m = meta(d);
  const template = clone(spec(d).template as JsonObject);
  template.metadata ??= {};
  const tm = template.metadata as JsonObject;
  tm.labels = { ...((tm.labels ?? {}) as JsonObject), [HASH_LABEL]: hash };
  const matchLabels = ((spec(d).selector as JsonObject | undefined)?.matchLabels ?? {}) as JsonObject;
  return {
    kind: "ReplicaSet",
    apiVersion: "apps/v1",
    metadata: {
      name: `${String(m.name)}-${hash}`,
      namespace: m.namespace ?? null,
      uid: randomUUID(),
      resourceVersion: "",
      generation: 1,
      creationTimestamp: now(),
      labels: clone(tm.labels),
      annotations: {},
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: m.name ?? null,
          uid: m.uid ?? null,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { replicas: 0, selector: { matchLabels: { ...matchLabels, [HASH_LABEL]: hash } }, template },
    status: { replicas: 0 },
  };
}

function scaled(rs: JsonObject, replicas: number): void {
  spec(rs).replicas = replicas;
  const status: JsonObject = { replicas };
  if (replicas > 0)
    Object.assign(status, {
      fullyLabeledReplicas: replicas,
      readyReplicas: replicas,
      availableReplicas: replicas,
    });
  status.observedGeneration = meta(rs).generation ?? 1;
  rs.status = status;
}

const controlledBy = (rs: JsonObject, uid: Json | undefined): boolean =>
  ((meta(rs).ownerReferences ?? []) as JsonObject[]).some((o) => o.controller === true && o.uid === uid);

export class ReplicaSets {
  #items = new Map<string, JsonObject>();

  constructor(private readonly nextRv: () => string) {}

  list(ns?: string): JsonObject[] {
    return [...this.#items.values()].filter((rs) => ns === undefined || meta(rs).namespace === ns);
  }

  get(ns: string, name: string): JsonObject | undefined {
    return this.#items.get(`${ns}/${name}`);
  }

  /**
   * After the controller observed Deployment `d` at `revision`: the ReplicaSet of its template
   * (found by template, ignoring the hash label, or created) is the newest, with every replica;
   * the older ones are scaled to zero and keep the annotations they had.
   */
  sync(d: JsonObject, revision: string, hash: string): void {
    const owned = this.#owned(d);
    let current = this.find(d);
    if (!current) {
      current = newReplicaSet(d, hash);
      this.#items.set(`${String(meta(d).namespace)}/${String(meta(current).name)}`, current);
    }
    for (const rs of [...owned.filter((x) => x !== current), current]) {
      const before = clone(rs);
      if (rs === current) meta(rs).annotations = annotationsFor(d, revision);
      scaled(rs, rs === current ? Number(spec(d).replicas ?? 1) : 0);
      if (!deepEqual(before, rs)) meta(rs).resourceVersion = this.nextRv();
    }
  }

  /** The ReplicaSet of Deployment `d`'s pod template, if it has one (found by template, ignoring the hash label). */
  find(d: JsonObject): JsonObject | undefined {
    const template = spec(d).template;
    return this.#owned(d).find((rs) => deepEqual(withoutHash(spec(rs).template), template));
  }

  #owned(d: JsonObject): JsonObject[] {
    return this.list(String(meta(d).namespace)).filter((rs) => controlledBy(rs, meta(d).uid));
  }

  /** The garbage collector: a deleted Deployment's ReplicaSets go with it. */
  dropOwnedBy(uid: Json | undefined): void {
    for (const [k, rs] of this.#items) if (controlledBy(rs, uid)) this.#items.delete(k);
  }
}
