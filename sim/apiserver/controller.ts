// A stand-in for the deployment, daemonset and statefulset controllers: after every main
// write it observes the new generation and walks the rollout forward one status write per
// step, each a new resourceVersion and a MODIFIED watch event. The mode decides how far a
// rollout gets, which is how tests get flapping, stuck or crash-looping workloads.
import { DEPLOYMENT_REVISION, templateHash, type WorkloadKind } from "./objects.ts";
import type { JsonObject } from "./patch.ts";
import { type DesiredPod, type PodHealth, podSuffix, syncPods } from "./pods.ts";
import { type RolloutPoint, renderStatus } from "./render.ts";
import type { Store } from "./store.ts";

export type ControllerMode = "healthy" | "flap" | "deadline" | "unsettled" | "slow" | "crashloop";

/**
 * How a bad build's pods behave. "flap": running, never Ready (a failing readiness probe), so the
 * rollout never settles; "deadline": the same, and a Deployment runs out of its progress deadline;
 * "crashloop": the containers exit at once and back off (restartCount growing); "pull": the image
 * cannot be pulled; `crashAfterMs`: Ready, the rollout settles, then the containers crash that long
 * after the pods became Ready (a build that dies after warm-up); `unreadyAfterMs`: Ready, then
 * unready without a crash; `restartOnceAfterMs`: Ready, the rollout settles, then each container
 * restarts once that long after (lastState.terminated.finishedAt says when), is unready for a few
 * controller steps and runs Ready again: a workload that looks settled, with a restart to show.
 */
export type BadBuild =
  | "flap"
  | "deadline"
  | "crashloop"
  | "pull"
  | { crashAfterMs: number }
  | { unreadyAfterMs: number }
  | { restartOnceAfterMs: number };

/**
 * The kubelet's back-off, compressed: 10 s, doubling, capped at 5 min on a real node; here
 * RESTART_MS, doubling, capped at thirty times that. A crashing container's first restart is
 * immediate (it runs again for a few steps before its second crash); a pod whose image cannot be
 * pulled shows ContainerCreating for a few steps before its first ErrImagePull.
 */
const RESTART_MS = 1000;
const FIRST_STEPS = 3;
const backoffMs = (n: number) => Math.min(RESTART_MS * 2 ** Math.max(0, n - 1), RESTART_MS * 30);

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
  /** Images this workload's pods fail on (a bad build), whatever its mode. */
  badImages?: Set<string>;
  /** How a rollout to a bad image fails. */
  badMode: BadBuild;
  timer?: ReturnType<typeof setTimeout>;
  /** Each template's containers by its hash: what the pods of that revision run. */
  templates: Map<string, Array<{ name: string; image: string }>>;
  labels: JsonObject;
  pods: string[];
  /**
   * The new pods of a settled rollout to a build that fails later: crashed, unready, or restarted
   * once (`restarting` while the restarted containers are not Ready yet, `restarted` once they are).
   */
  broken: "no" | "crash" | "unready" | "restarting" | "restarted";
  restarts: number;
  /** When the containers last restarted (RFC 3339, seconds), for a restart-once build. */
  restartedAt?: string;
  breakTimer?: ReturnType<typeof setTimeout>;
  restartTimer?: ReturnType<typeof setTimeout>;
}

/**
 * One rollout as the controller saw it: from the generation that brought a new template to the
 * step that settled it (or the next new template, which supersedes it). `start` and `end` are
 * places in one sequence of every start and end, so overlap is judged without a clock; `startMs`
 * and `endMs` are wall times, for a reader.
 */
export interface RolloutRecord {
  workload: string;
  start: number;
  end?: number;
  startMs: number;
  endMs?: number;
}

/** Steps the earlier rollout's pods take to go (their grace period) after a revert brought an old ReplicaSet back. */
const LEFT_OVER_STEPS = 10;

const keyOf = (kind: WorkloadKind, ns: string, name: string): string => `${kind}/${ns}/${name}`;
const meta = (o: JsonObject): JsonObject => o.metadata as JsonObject;

export class Controllers {
  #workloads = new Map<string, Workload>();
  #stopped = false;
  #seq = 0;
  /** Every rollout since the server started, in the order they started. */
  readonly rollouts: RolloutRecord[] = [];

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
      templates: new Map([[hash, templateContainers(obj)]]),
      labels: templateLabels(obj),
      pods: [],
      broken: "no",
      restarts: 0,
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
    how: BadBuild = "flap",
  ): void {
    const w = this.#workloads.get(keyOf(kind, ns, name));
    if (!w) throw new Error(`Cannot set bad images of ${kind} ${ns}/${name}: no such workload`);
    w.badImages = new Set(images);
    w.badMode = how;
    this.#schedule(w, this.stepMs);
  }

  /** How the pods of the wanted template behave when it names a bad image. */
  #badBuild(w: Workload): BadBuild | undefined {
    return this.#runsBadImage(w) ? w.badMode : undefined;
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
    if (w) this.#clearTimers(w);
    if (w) for (const pod of w.pods) this.store.remove("Pod", ns, pod);
    this.#workloads.delete(keyOf(kind, ns, name));
  }

  stop(): void {
    this.#stopped = true;
    for (const w of this.#workloads.values()) this.#clearTimers(w);
  }

  #clearTimers(w: Workload): void {
    if (w.timer) clearTimeout(w.timer);
    if (w.breakTimer) clearTimeout(w.breakTimer);
    if (w.restartTimer) clearTimeout(w.restartTimer);
    w.breakTimer = undefined;
    w.restartTimer = undefined;
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
      w.templates.set(hash, templateContainers(obj));
      this.#record(w, "start");
      this.#heal(w);
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
    const bad = this.#badBuild(w);
    // A build that fails only later rolls out as the workload's mode says.
    switch (typeof bad === "string" ? (bad === "deadline" ? bad : "flap") : w.mode) {
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
    if (w.step === 4) this.#record(w, "end");
    const point: RolloutPoint = {
      replicas: w.kind === "DaemonSet" ? w.nodes : Number((obj.spec as JsonObject).replicas ?? 1),
      generation,
      step: w.step,
      flicker: w.flicker,
      deadlineExceeded: w.deadlineExceeded,
      // Between a crash-after-warm-up build's first crash and its second, its pods are Ready.
      broken:
        w.step === 4 &&
        w.broken !== "no" &&
        w.broken !== "restarted" &&
        !(w.broken === "crash" && w.restarts === 0),
      currentName: `${w.name}-${w.currentHash}`,
      updateName: `${w.name}-${w.updateHash}`,
      now: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    };
    const status = renderStatus(w.kind, point, obj.status as JsonObject | undefined);
    this.store.updateStatus(w.kind, w.ns, w.name, status, annotations);
    if (w.step === 4) this.#armBreak(w);
    this.#syncPods(w, point.replicas);
  }

  /** A settled rollout to a build that fails later: its pods break that long after they became Ready. */
  #armBreak(w: Workload): void {
    const bad = this.#badBuild(w);
    if (!bad || typeof bad === "string" || w.broken !== "no" || w.breakTimer || this.#stopped) return;
    if ("restartOnceAfterMs" in bad) {
      this.#armRestart(w, bad.restartOnceAfterMs);
      return;
    }
    const crash = "crashAfterMs" in bad;
    const after = crash ? bad.crashAfterMs : bad.unreadyAfterMs;
    w.breakTimer = setTimeout(() => {
      w.breakTimer = undefined;
      w.broken = crash ? "crash" : "unready";
      // The first crash restarts at once: tick 0 of the loop, its container running again.
      w.restarts = 0;
      w.restartedAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      this.#writeCurrent(w);
    }, after);
  }

  /** Each container restarts once `after` ms from now, is unready a few steps, then Ready again. */
  #armRestart(w: Workload, after: number): void {
    w.breakTimer = setTimeout(() => {
      w.broken = "restarting";
      w.restarts = 1;
      w.restartedAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      this.#writeCurrent(w);
      w.breakTimer = setTimeout(() => {
        w.breakTimer = undefined;
        w.broken = "restarted";
        this.#writeCurrent(w);
      }, this.stepMs * 3);
    }, after);
  }

  /** A rollout of `w` starts (ending the one still open: a new template supersedes it) or settles. */
  #record(w: Workload, what: "start" | "end"): void {
    const workload = keyOf(w.kind, w.ns, w.name);
    const open = this.rollouts.findLast((r) => r.workload === workload && r.end === undefined);
    if (open) Object.assign(open, { end: this.#seq++, endMs: Date.now() });
    if (what === "start") this.rollouts.push({ workload, start: this.#seq++, startMs: Date.now() });
  }

  /** A new template: its pods are new, nothing of the old ones' trouble carries over. */
  #heal(w: Workload): void {
    if (w.breakTimer) clearTimeout(w.breakTimer);
    if (w.restartTimer) clearTimeout(w.restartTimer);
    w.breakTimer = undefined;
    w.restartTimer = undefined;
    w.broken = "no";
    w.restarts = 0;
    w.restartedAt = undefined;
  }

  /** What the new pods show: a bad build's failure, a later break, or the rollout's progress. */
  #newHealth(w: Workload, last: boolean): PodHealth {
    const bad = this.#badBuild(w);
    const finishedAt = w.restartedAt;
    if (w.broken === "restarting" && finishedAt) return { kind: "unready", restarts: 1, finishedAt };
    if (w.broken === "restarted" && finishedAt) return { kind: "ready", restarts: 1, finishedAt };
    const loop = this.#loop(w);
    if (loop === "crash") return this.#crashHealth(w, bad === "crashloop");
    if (!bad && w.mode === "crashloop" && !w.flicker)
      return { kind: "crashing", restarts: Math.max(1, w.restarts) };
    // ContainerCreating first, then ErrImagePull and ImagePullBackOff in turn.
    if (loop === "pull")
      return w.restarts === 0 ? { kind: "starting" } : { kind: "pull", backoff: w.restarts % 2 === 0 };
    if (bad === "flap" || bad === "deadline" || w.broken === "unready")
      return { kind: "unready", restarts: 0 };
    if (!bad && w.mode === "crashloop") return { kind: "ready", restarts: w.restarts };
    if (w.step === 4) return { kind: "ready", restarts: 0 };
    if (!bad && (w.mode === "flap" || w.mode === "deadline")) return { kind: "unready", restarts: 0 };
    // "unsettled": a workload that cannot settle through no fault of its build (no node to run
    // its new pod): the pod stays Pending.
    if (!bad && w.mode === "unsettled") return { kind: "starting" };
    // The pod the workload's status still counts as unavailable at this step (render.ts).
    const waiting = w.step === 1 || (w.step === 2 ? w.kind !== "Deployment" : w.kind === "Deployment");
    return last && waiting ? { kind: "starting" } : { kind: "ready", restarts: 0 };
  }

  /** Whether the new pods crash-loop (a bad build) or fail to pull, and so move on a back-off. */
  #loop(w: Workload): "crash" | "pull" | undefined {
    const bad = this.#badBuild(w);
    if (bad === "crashloop" || w.broken === "crash") return "crash";
    return bad === "pull" ? "pull" : undefined;
  }

  /**
   * A crash-looping build at tick n of its loop: at 0 its first crash has just restarted it (at
   * once, restartCount 1, running: Ready again for a build that crashes after warm-up, not for
   * one that exits at once); from 1 on it waits in CrashLoopBackOff, restarted once per back-off.
   */
  #crashHealth(w: Workload, atOnce: boolean): PodHealth {
    if (w.restarts > 0) return { kind: "crashing", restarts: w.restarts };
    w.restartedAt ??= new Date().toISOString().replace(/\.\d+Z$/, "Z");
    return { kind: atOnce ? "unready" : "ready", restarts: 1, finishedAt: w.restartedAt };
  }

  /** Keeps crash-looping (and image-pulling) pods moving while they do, on a growing back-off. */
  #tickRestarts(w: Workload, health: PodHealth): void {
    const loop = this.#loop(w);
    if ((!loop && health.kind !== "crashing") || this.#stopped) {
      if (w.restartTimer) clearTimeout(w.restartTimer);
      w.restartTimer = undefined;
      return;
    }
    // The crashloop mode (not a bad build) keeps its fixed pace.
    const delay = !loop ? RESTART_MS : w.restarts === 0 ? this.stepMs * FIRST_STEPS : backoffMs(w.restarts);
    w.restartTimer ??= setTimeout(() => {
      w.restartTimer = undefined;
      w.restarts += 1;
      // The second crash of a build that crashed after warm-up unsettles its workload again.
      if (w.broken === "crash" && w.restarts === 1) this.#writeCurrent(w);
      else this.#syncPods(w, this.#replicas(w));
    }, delay);
  }

  #replicas(w: Workload): number {
    const obj = this.store.get(w.kind, w.ns, w.name);
    return w.kind === "DaemonSet" ? w.nodes : Number((obj?.spec as JsonObject | undefined)?.replicas ?? 1);
  }

  #syncPods(w: Workload, total: number): void {
    const fresh = w.step === 4 ? total : w.step === 0 ? 0 : w.step === 1 ? Math.min(1, total) : total;
    const old =
      w.step === 4
        ? 0
        : w.kind !== "Deployment"
          ? total - fresh
          : w.step === 1
            ? total
            : w.step === 2
              ? 1
              : 0;
    const health = this.#newHealth(w, false);
    this.#tickRestarts(w, health);
    const pod = (hash: string, i: number, h: PodHealth): DesiredPod => ({
      name: podName(w, hash, i),
      hash: w.kind === "StatefulSet" ? `${w.name}-${hash}` : hash,
      nodeName: `node-${(i % Math.max(1, w.nodes)) + 1}`,
      containers: w.templates.get(hash) ?? [],
      health: h,
    });
    const desired: DesiredPod[] = [];
    // DaemonSet and StatefulSet pods are replaced in place (one per node, one per ordinal, the
    // highest first); a Deployment's new ReplicaSet grows beside the old one.
    for (let i = 0; i < old; i++) desired.push(pod(w.currentHash, i, { kind: "ready", restarts: 0 }));
    const base = w.kind === "Deployment" ? 0 : old;
    for (let i = 0; i < fresh; i++)
      desired.push(pod(w.updateHash, base + i, i === fresh - 1 ? this.#newHealth(w, true) : health));
    const owner = { kind: w.kind, namespace: w.ns, name: w.name, labels: w.labels };
    w.pods = syncPods(this.store, owner, w.pods, desired);
  }
}

function podName(w: Workload, hash: string, i: number): string {
  if (w.kind === "StatefulSet") return `${w.name}-${i}`;
  if (w.kind === "DaemonSet") return `${w.name}-${podSuffix(`${w.name}/${hash}/${i}`)}`;
  return `${w.name}-${hash}-${podSuffix(`${w.name}/${hash}/${i}`)}`;
}

function templateContainers(obj: JsonObject): Array<{ name: string; image: string }> {
  const spec = ((obj.spec as JsonObject).template as JsonObject).spec as JsonObject;
  const all = [
    ...((spec.initContainers as JsonObject[]) ?? []),
    ...((spec.containers as JsonObject[]) ?? []),
  ];
  return all.map((c) => ({ name: String(c.name), image: String(c.image) }));
}

function templateLabels(obj: JsonObject): JsonObject {
  const t = (obj.spec as JsonObject).template as JsonObject;
  return { ...(((t.metadata as JsonObject | undefined)?.labels as JsonObject | undefined) ?? {}) };
}

/** OnDelete DaemonSets and StatefulSets only replace a pod when someone deletes it. */
function rollsOnItsOwn(obj: JsonObject): boolean {
  const strategy = (obj.spec as JsonObject).updateStrategy as JsonObject | undefined;
  return obj.kind === "Deployment" || strategy?.type !== "OnDelete";
}
