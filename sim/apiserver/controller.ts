// A stand-in for the deployment, daemonset and statefulset controllers: after every main
// write it observes the new generation and walks the rollout forward one status write per
// step, each a new resourceVersion and a MODIFIED watch event. The mode decides how far a
// rollout gets, which is how tests get flapping, stuck or crash-looping workloads.
import { DEPLOYMENT_REVISION, templateHash, type WorkloadKind } from "./objects.ts";
import type { JsonObject } from "./patch.ts";
import { type RolloutPoint, renderStatus } from "./render.ts";
import type { Store } from "./store.ts";

export type ControllerMode = "healthy" | "flap" | "deadline" | "unsettled" | "slow" | "crashloop";

interface Workload {
  kind: WorkloadKind;
  ns: string;
  name: string;
  mode: ControllerMode;
  slowMs: number;
  /** DaemonSets have no replicas: this many nodes run a pod. */
  nodes: number;
  step: RolloutPoint["step"];
  flicker: boolean;
  deadlineExceeded: boolean;
  /**
   * The deadline is an earlier rollout's, kept across a generation that brought back an existing
   * ReplicaSet (the real controller resets the condition only when it creates one), until this
   * rollout's first progress (the earlier rollout's pods going away) ends it.
   */
  leftOverDeadline: boolean;
  currentHash: string;
  updateHash: string;
  changedAt: number;
  /** Images this workload's pods never become available on (a bad build), whatever its mode. */
  badImages?: Set<string>;
  /** How a rollout to a bad image fails: "flap" never settles, "deadline" runs out of its progress deadline. */
  badMode: "flap" | "deadline";
  timer?: ReturnType<typeof setTimeout>;
}

/** Steps the earlier rollout's pods take to go (their grace period) after a revert brought an old ReplicaSet back. */
const LEFT_OVER_STEPS = 10;

const keyOf = (kind: WorkloadKind, ns: string, name: string): string => `${kind}/${ns}/${name}`;
const meta = (o: JsonObject): JsonObject => o.metadata as JsonObject;

export class Controllers {
  #workloads = new Map<string, Workload>();
  #stopped = false;

  constructor(
    private readonly store: Store,
    private readonly stepMs: number,
  ) {
    store.onMainWrite = (kind, ns, name) => this.#changed(kind, ns, name);
  }

  /** Registers a freshly created object and writes its settled status at once. */
  adopt(obj: JsonObject, opts: { mode: ControllerMode; slowMs: number; nodes: number }): void {
    const m = meta(obj);
    const hash = templateHash(obj);
    const w: Workload = {
      kind: obj.kind as WorkloadKind,
      ns: String(m.namespace),
      name: String(m.name),
      mode: "healthy",
      slowMs: opts.slowMs,
      nodes: opts.nodes,
      step: 4,
      flicker: false,
      deadlineExceeded: false,
      leftOverDeadline: false,
      badMode: "flap",
      currentHash: hash,
      updateHash: hash,
      changedAt: Date.now(),
    };
    this.#workloads.set(keyOf(w.kind, w.ns, w.name), w);
    const annotations = w.kind === "Deployment" ? { [DEPLOYMENT_REVISION]: "1" } : undefined;
    this.#write(w, obj, Number(m.generation), annotations);
    this.#syncReplicaSets(w, "1");
    this.setMode(w.kind, w.ns, w.name, opts.mode);
  }

  setMode(
    kind: WorkloadKind,
    ns: string,
    name: string,
    mode: ControllerMode,
    opts?: { slowMs?: number },
  ): void {
    const w = this.#workloads.get(keyOf(kind, ns, name));
    if (!w) throw new Error(`Cannot set mode of ${kind} ${ns}/${name}: no such workload`);
    w.mode = mode;
    if (opts?.slowMs !== undefined) w.slowMs = opts.slowMs;
    if (mode === "unsettled" && w.step === 4 && !this.#scaledToZero(w)) {
      // Written synchronously: the object must read as unsettled the moment the mode is set.
      w.step = 2;
      this.#writeCurrent(w);
    }
    this.#schedule(w, this.stepMs);
  }

  /**
   * A rollout of this workload to a template naming one of these images flaps, as a crash-looping
   * build would, or (`how` "deadline", a Deployment) runs out of its progress deadline, as a build
   * never Ready does.
   */
  failImages(
    kind: WorkloadKind,
    ns: string,
    name: string,
    images: readonly string[],
    how: "flap" | "deadline" = "flap",
  ): void {
    const w = this.#workloads.get(keyOf(kind, ns, name));
    if (!w) throw new Error(`Cannot set bad images of ${kind} ${ns}/${name}: no such workload`);
    w.badImages = new Set(images);
    w.badMode = how;
    this.#schedule(w, this.stepMs);
  }

  #runsBadImage(w: Workload): boolean {
    if (!w.badImages?.size) return false;
    const obj = this.store.get(w.kind, w.ns, w.name);
    const spec = ((obj?.spec as JsonObject | undefined)?.template as JsonObject | undefined)?.spec as
      | JsonObject
      | undefined;
    const containers = [
      ...((spec?.containers as JsonObject[]) ?? []),
      ...((spec?.initContainers as JsonObject[]) ?? []),
    ];
    return containers.some((c) => w.badImages?.has(String(c.image)));
  }

  forget(kind: WorkloadKind, ns: string, name: string): void {
    const w = this.#workloads.get(keyOf(kind, ns, name));
    if (w?.timer) clearTimeout(w.timer);
    this.#workloads.delete(keyOf(kind, ns, name));
  }

  stop(): void {
    this.#stopped = true;
    for (const w of this.#workloads.values()) if (w.timer) clearTimeout(w.timer);
  }

  #changed(kind: WorkloadKind, ns: string, name: string): void {
    const w = this.#workloads.get(keyOf(kind, ns, name));
    if (!w) return;
    w.changedAt = Date.now();
    this.#schedule(w, this.stepMs);
  }

  #schedule(w: Workload, ms: number): void {
    if (this.#stopped) return;
    if (w.timer) clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      w.timer = undefined;
      this.#reconcile(w);
    }, ms);
  }

  #scaledToZero(w: Workload): boolean {
    const obj = this.store.get(w.kind, w.ns, w.name);
    return !!obj && w.kind !== "DaemonSet" && (obj.spec as JsonObject).replicas === 0;
  }

  /** One controller sync: observe a new generation, else move the rollout as the mode allows. */
  #reconcile(w: Workload): void {
    const obj = this.store.get(w.kind, w.ns, w.name);
    if (!obj || this.#stopped) return;
    const generation = Number(meta(obj).generation);
    const observed = Number((obj.status as JsonObject | undefined)?.observedGeneration ?? 0);
    if (observed < generation) {
      this.#observe(w, obj, generation);
      return;
    }
    const next = this.#advance(w);
    this.#writeCurrent(w); // a step that changed nothing is skipped by the store
    if (next !== "idle") this.#schedule(w, next);
  }

  #observe(w: Workload, obj: JsonObject, generation: number): void {
    const hash = templateHash(obj);
    let annotations: Record<string, string> | undefined;
    let revision = String((meta(obj).annotations as JsonObject | undefined)?.[DEPLOYMENT_REVISION] ?? "1");
    if (hash !== w.updateHash) {
      if (w.step === 4) w.currentHash = w.updateHash;
      w.updateHash = hash;
      w.step = rollsOnItsOwn(obj) ? 1 : 0;
      const reused = w.kind === "Deployment" && this.store.replicaSets.find(obj) !== undefined;
      w.leftOverDeadline = w.deadlineExceeded && reused;
      w.deadlineExceeded = w.leftOverDeadline;
      w.flicker = false;
      if (w.kind === "Deployment") {
        const previous = Number(
          (meta(obj).annotations as JsonObject | undefined)?.[DEPLOYMENT_REVISION] ?? 0,
        );
        annotations = { [DEPLOYMENT_REVISION]: String(previous + 1) };
      }
    }
    revision = annotations?.[DEPLOYMENT_REVISION] ?? revision;
    this.#write(w, obj, generation, annotations);
    this.#syncReplicaSets(w, revision);
    if (w.step !== 4 && w.step !== 0)
      this.#schedule(w, w.leftOverDeadline ? this.stepMs * LEFT_OVER_STEPS : this.stepMs);
  }

  /** A Deployment's ReplicaSets follow every observed generation (template and annotations). */
  #syncReplicaSets(w: Workload, revision: string): void {
    const obj = this.store.get(w.kind, w.ns, w.name);
    if (obj && w.kind === "Deployment") this.store.replicaSets.sync(obj, revision, w.updateHash);
  }

  /** Moves the rollout one step; returns the delay to the next sync, or "idle" to wait for a change. */
  #advance(w: Workload): number | "idle" {
    if (w.step === 4 || w.step === 0) return "idle";
    if (w.leftOverDeadline) {
      // The earlier rollout's pods are gone: progress, which ends its condition.
      w.leftOverDeadline = false;
      w.deadlineExceeded = false;
      return this.stepMs;
    }
    switch (this.#runsBadImage(w) ? w.badMode : w.mode) {
      case "healthy":
        w.deadlineExceeded = false;
        w.flicker = false;
        w.step = (w.step + 1) as RolloutPoint["step"];
        return w.step === 4 ? "idle" : this.stepMs;
      case "slow": {
        const left = w.changedAt + w.slowMs - Date.now();
        if (left > 0) return left;
        w.step = 4;
        return "idle";
      }
      case "crashloop":
        w.step = 1;
        w.flicker = !w.flicker;
        return this.stepMs * 3;
      case "deadline":
        if (w.kind !== "Deployment" || w.deadlineExceeded) return "idle";
        w.deadlineExceeded = true;
        return "idle";
      default: // flap and unsettled: new pods never become available
        return "idle";
    }
  }

  #writeCurrent(w: Workload): void {
    const obj = this.store.get(w.kind, w.ns, w.name);
    if (obj) this.#write(w, obj, Number((obj.status as JsonObject | undefined)?.observedGeneration ?? 1));
  }

  #write(w: Workload, obj: JsonObject, generation: number, annotations?: Record<string, string>): void {
    if (w.step === 4) w.currentHash = w.updateHash;
    const point: RolloutPoint = {
      replicas: w.kind === "DaemonSet" ? w.nodes : Number((obj.spec as JsonObject).replicas ?? 1),
      generation,
      step: w.step,
      flicker: w.flicker,
      deadlineExceeded: w.deadlineExceeded,
      currentName: `${w.name}-${w.currentHash}`,
      updateName: `${w.name}-${w.updateHash}`,
      now: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    };
    const status = renderStatus(w.kind, point, obj.status as JsonObject | undefined);
    this.store.updateStatus(w.kind, w.ns, w.name, status, annotations);
  }
}

/** OnDelete DaemonSets and StatefulSets only replace a pod when someone deletes it. */
function rollsOnItsOwn(obj: JsonObject): boolean {
  const strategy = (obj.spec as JsonObject).updateStrategy as JsonObject | undefined;
  return obj.kind === "Deployment" || strategy?.type !== "OnDelete";
}
