// The object store: one global resourceVersion counter like etcd's revision, a bounded
// event history so watches can start "at exact" from an older RV, and the write rules of
// the registry strategies (status preserved on main writes, spec preserved on status writes).

import { randomUUID } from "node:crypto";
import {
  CONTROLLER_MANAGER,
  type ManagedWrite,
  managedFieldsAfter,
  type Writer,
  zeroObject,
} from "./managed-fields.ts";
import {
  applyDefaults,
  bumpsGeneration,
  DS_TEMPLATE_GENERATION,
  newMetadata,
  RESOURCES,
  validate,
  type WorkloadKind,
} from "./objects.ts";
import { clone, deepEqual, type Json, type JsonObject } from "./patch.ts";
import { ReplicaSets } from "./replicasets.ts";
import { badRequest, conflict, notFound, type Status } from "./status.ts";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";
/** Workloads, and the pods the simulated kubelet keeps for them. */
export type StoredKind = WorkloadKind | "Pod";

export interface StoredEvent {
  rv: number;
  type: EventType;
  kind: StoredKind;
  namespace: string;
  name: string;
  object: JsonObject;
}

export interface Watcher {
  kind: StoredKind;
  namespace?: string;
  name?: string;
  send(ev: StoredEvent): void;
}

/** A failed write, carrying the Status the server answers with. */
export class WriteError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
  }
}

const HISTORY_LIMIT = 5000;
const keyOf = (kind: StoredKind, ns: string, name: string): string => `${kind}/${ns}/${name}`;
const meta = (o: JsonObject): JsonObject => o.metadata as JsonObject;

export class Store {
  #objects = new Map<string, JsonObject>();
  #history: StoredEvent[] = [];
  #watchers = new Set<Watcher>();

  constructor() {
    for (const ns of ["default", "kube-system"]) this.ensureNamespace(ns);
  }
  /** RVs at or below this are "compacted": a watch from them is answered 410 Expired. */
  compactedRv = 0;
  rv = 1000; // an arbitrary non-zero start, so "0" never collides with a real RV
  /** Namespaces exist once something was created in them (kubectl checks them after a NotFound). */
  readonly namespaces = new Map<string, JsonObject>();
  onMainWrite: (kind: WorkloadKind, ns: string, name: string) => void = () => {};
  /** The deployment controller's ReplicaSets (their resourceVersions share the store's counter). */
  readonly replicaSets = new ReplicaSets(() => String(++this.rv));
  /** The clock of managedFields times (tests pin it to see a time bumped or kept). */
  now: () => Date = () => new Date();

  get(kind: StoredKind, ns: string, name: string): JsonObject | undefined {
    return this.#objects.get(keyOf(kind, ns, name));
  }

  list(kind: StoredKind, ns?: string, name?: string): JsonObject[] {
    return [...this.#objects.values()].filter(
      (o) =>
        o.kind === kind &&
        (ns === undefined || meta(o).namespace === ns) &&
        (name === undefined || meta(o).name === name),
    );
  }

  history(after: number): StoredEvent[] {
    return this.#history.filter((e) => e.rv > after);
  }

  watch(w: Watcher): () => void {
    this.#watchers.add(w);
    return () => this.#watchers.delete(w);
  }

  #commit(type: EventType, obj: JsonObject): JsonObject {
    this.rv += 1;
    meta(obj).resourceVersion = String(this.rv);
    const m = meta(obj);
    const kind = obj.kind as StoredKind;
    const ev: StoredEvent = {
      rv: this.rv,
      type,
      kind,
      namespace: String(m.namespace),
      name: String(m.name),
      object: clone(obj),
    };
    if (type === "DELETED") this.#objects.delete(keyOf(kind, ev.namespace, ev.name));
    else this.#objects.set(keyOf(kind, ev.namespace, ev.name), obj);
    this.#history.push(ev);
    if (this.#history.length > HISTORY_LIMIT)
      this.compactedRv = this.#history.shift()?.rv ?? this.compactedRv;
    for (const w of this.#watchers) {
      if (
        w.kind === kind &&
        (!w.namespace || w.namespace === ev.namespace) &&
        (!w.name || w.name === ev.name)
      )
        w.send(ev);
    }
    return clone(obj);
  }

  ensureNamespace(name: string): void {
    if (this.namespaces.has(name)) return;
    this.rv += 1;
    const metadata = newMetadata({ name, labels: { "kubernetes.io/metadata.name": name } }, String(this.rv));
    delete metadata.namespace;
    delete metadata.generation;
    this.namespaces.set(name, {
      kind: "Namespace",
      apiVersion: "v1",
      metadata,
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
  }

  /** `manager: null` creates an object without managedFields (made before tracking existed). */
  create(manifest: JsonObject, manager: string | null): JsonObject {
    const obj = clone(manifest);
    this.ensureNamespace(String(meta(obj).namespace));
    obj.metadata = newMetadata(meta(obj), "");
    applyDefaults(obj);
    // Computed after defaulting and before the strategy's own fields, as the apiserver does.
    if (manager !== null) {
      const before = zeroObject(String(obj.kind));
      this.#track(
        obj,
        { live: undefined, requested: undefined, before, after: obj, creating: true },
        { manager },
      );
    }
    if (obj.kind === "DaemonSet") setAnnotation(obj, DS_TEMPLATE_GENERATION, "1");
    return this.#commit("ADDED", obj);
  }

  #track(obj: JsonObject, w: Omit<ManagedWrite, "writer" | "now">, writer: Writer): void {
    const now = this.now()
      .toISOString()
      .replace(/\.\d+Z$/, "Z");
    const fields = managedFieldsAfter({ ...w, writer, now });
    if (fields.length > 0) meta(obj).managedFields = fields;
    else delete meta(obj).managedFields;
  }

  /** A write through the main resource (PATCH, another actor): status and server fields are kept. */
  updateMain(
    kind: WorkloadKind,
    ns: string,
    name: string,
    candidate: JsonObject,
    writer: Writer,
  ): JsonObject {
    const res = RESOURCES[kind];
    const old = this.get(kind, ns, name);
    if (!old) throw new WriteError(notFound(res, name));
    const next = clone(candidate);
    next.metadata ??= {};
    const m = next.metadata as JsonObject;
    if (m.name !== undefined && m.name !== name) {
      throw new WriteError(
        badRequest(`the name of the object (${String(m.name)}) does not match the name on the URL (${name})`),
      );
    }
    if (m.namespace !== undefined && m.namespace !== ns) {
      throw new WriteError(
        badRequest("the namespace of the provided object does not match the namespace sent on the request"),
      );
    }
    // metadata.resourceVersion in the result is an optimistic-concurrency precondition.
    if (m.resourceVersion !== undefined && m.resourceVersion !== meta(old).resourceVersion) {
      throw new WriteError(conflict(res, name));
    }
    restoreServerFields(old, next);
    applyDefaults(next);
    const problem = validate(next);
    if (problem) throw new WriteError(problem);
    const requested = m.managedFields as Json | undefined;
    const live = meta(old).managedFields as Json | undefined;
    this.#track(next, { live, requested, before: old, after: next, creating: false }, writer);
    if (kind === "DaemonSet") keepTemplateGeneration(old, next);
    if (deepEqual(old, next)) return clone(old); // the store skips byte-identical writes
    if (bumpsGeneration(kind, old, next)) m.generation = Number(meta(old).generation) + 1;
    const saved = this.#commit("MODIFIED", next);
    this.onMainWrite(kind, ns, name);
    return saved;
  }

  /**
   * A controller's writes: its annotations and status in one Update of subresource status by
   * kube-controller-manager (which never touches an image), as the real deployment controller's
   * UpdateStatus does.
   */
  updateStatus(
    kind: WorkloadKind,
    ns: string,
    name: string,
    status: JsonObject,
    annotations?: Record<string, string>,
  ) {
    const old = this.get(kind, ns, name);
    if (!old) return undefined;
    const next = clone(old);
    next.status = clone(status);
    for (const [k, v] of Object.entries(annotations ?? {})) setAnnotation(next, k, v);
    if (deepEqual(old, next)) return clone(old);
    // The deployment controller writes the revision annotation with UpdateStatus too (metadata is
    // writable through /status), so the real server files both under the status entry.
    const live = meta(next).managedFields as Json | undefined;
    const w = { live, requested: live, before: old, after: next, creating: false };
    this.#track(next, w, { manager: CONTROLLER_MANAGER, subresource: "status" });
    return this.#commit("MODIFIED", next);
  }

  /** A pod as the simulated kubelet writes it: created with a new uid, or its status replaced. */
  put(obj: JsonObject): void {
    const m = meta(obj);
    const old = this.get(obj.kind as StoredKind, String(m.namespace), String(m.name));
    m.uid = old ? (meta(old).uid ?? randomUUID()) : randomUUID();
    this.#commit(old ? "MODIFIED" : "ADDED", obj);
  }

  remove(kind: StoredKind, ns: string, name: string): void {
    const old = this.get(kind, ns, name);
    if (old) this.#commit("DELETED", clone(old));
  }

  delete(kind: WorkloadKind, ns: string, name: string): JsonObject | undefined {
    const old = this.get(kind, ns, name);
    if (old && kind === "Deployment") this.replicaSets.dropOwnedBy(meta(old).uid);
    return old ? this.#commit("DELETED", clone(old)) : undefined;
  }
}

export function setAnnotation(obj: JsonObject, key: string, value: string): void {
  const m = meta(obj);
  m.annotations = { ...((m.annotations as JsonObject) ?? {}), [key]: value };
}

function restoreServerFields(old: JsonObject, next: JsonObject): void {
  const m = meta(next);
  const o = meta(old);
  next.apiVersion = old.apiVersion ?? null;
  next.kind = old.kind ?? null;
  for (const f of ["name", "namespace", "uid", "creationTimestamp", "generation", "resourceVersion"])
    m[f] = o[f] ?? null;
  if (m.annotations !== undefined && Object.keys(m.annotations as JsonObject).length === 0)
    delete m.annotations;
  if (old.status === undefined) delete next.status;
  else next.status = clone(old.status);
}

/** The server owns the DaemonSet template generation: +1 on a template change, else unchanged. */
function keepTemplateGeneration(old: JsonObject, next: JsonObject): void {
  const current = Number((meta(old).annotations as JsonObject | undefined)?.[DS_TEMPLATE_GENERATION] ?? 1);
  const changed = !deepEqual((old.spec as JsonObject).template, (next.spec as JsonObject).template);
  setAnnotation(next, DS_TEMPLATE_GENERATION, String(changed ? current + 1 : current));
}
