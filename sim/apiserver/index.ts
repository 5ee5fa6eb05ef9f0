// The simulated Kubernetes API server used by end-to-end tests, benchmarks and
// `image-refresh demo`. node:https (under Bun) rather than Bun.serve because it can destroy
// a connection before any response byte (the `reset` fault) and stream chunked watches.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { Socket } from "node:net";
import { type FaultRule, FaultSet } from "../faults.ts";
import { generateTls, type TlsMaterial } from "../tls.ts";
import { ConfigMaps } from "./configmaps.ts";
import { type BadBuild, type ControllerMode, Controllers, type RolloutRecord } from "./controller.ts";
import { applyFault, type Ctx, type RequestLogEntry, readContext, sendStatus } from "./http.ts";
import { renderKubeconfig } from "./kubeconfig.ts";
import { manifest, type WorkloadKind } from "./objects.ts";
import { clone, type JsonObject, mergePatch } from "./patch.ts";
import { authorize, type RbacPolicy } from "./rbac.ts";
import { authorized, type RouterState, route } from "./router.ts";
import { failure, type Status } from "./status.ts";
import { Store } from "./store.ts";
import { labelsMatch } from "./workloads.ts";

export type { FaultRule } from "../faults.ts";
export type { BadBuild, ControllerMode, RolloutRecord } from "./controller.ts";
export type { RequestLogEntry } from "./http.ts";
export type { WorkloadKind } from "./objects.ts";
export type { RbacPolicy, RbacRule } from "./rbac.ts";

export interface StartApiServerOptions {
  tls?: TlsMaterial;
  token?: string;
  /** Delay between two controller status writes; default 10 ms. */
  stepMs?: number;
  /** Interval of BOOKMARK events on watches that allow them; default 1000 ms. */
  bookmarkMs?: number;
  /**
   * The server's clock: managedFields `time` and every response's `Date` header (both whole
   * seconds, as kube-apiserver's); default the real one.
   */
  now?: () => Date;
}

/** A write made from a test as a named field manager, through the same Update path as a PATCH. */
export interface WriteAs {
  /** The field manager; each method names its default (the one kubectl uses for that change). */
  manager?: string;
}

export interface AddWorkload {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  containers: Array<{ name: string; image: string }>;
  initContainers?: Array<{ name: string; image: string }>;
  /** Pods for a Deployment/StatefulSet (default 1); nodes running a DaemonSet pod (default 3). */
  replicas?: number;
  annotations?: Record<string, string>;
  mode?: ControllerMode;
  slowMs?: number;
  updateStrategy?: "RollingUpdate" | "OnDelete";
  /**
   * The field manager that created it (one Update entry owning every field it set); default
   * `kubectl-client-side-apply`, as `kubectl apply -k` would (without its last-applied
   * annotation). `helm` for a Helm 3 release; `null` for an object without managedFields
   * (created before tracking existed, or reset), which later Updates do not start tracking.
   */
  manager?: string | null;
}

export interface SimApiServer {
  readonly url: string;
  readonly caPem: string;
  token: string;
  kubeconfig(opts?: {
    token?: string;
    caPem?: string;
    insecure?: boolean;
    namespace?: string;
    /** Another address for the same server (a relay in front of it); default its own URL. */
    server?: string;
  }): string;
  addWorkload(w: AddWorkload): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: API objects are free-form JSON for the tests that read them
  getObject(kind: WorkloadKind, namespace: string, name: string): any | undefined;
  /** Sets (or, with null, removes) annotations as `opts.manager` (default `kubectl-annotate`). */
  setAnnotations(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    a: Record<string, string | null>,
    opts?: WriteAs,
  ): void;
  /**
   * Sets the image of a container or init container as `opts.manager` (default `kubectl-set`,
   * as `kubectl set image`); ownership of `f:image` moves only if the image changes.
   */
  setImage(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    container: string,
    image: string,
    opts?: WriteAs,
  ): void;
  /**
   * Any other write as a named manager: `change` edits a copy of the stored object (e.g. a
   * Helm re-render, or `metadata.managedFields = [{}]` to reset them), then it is stored.
   */
  update(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    // biome-ignore lint/suspicious/noExplicitAny: API objects are free-form JSON for the tests that edit them
    change: (obj: any) => void,
    opts: Required<WriteAs>,
  ): void;
  setMode(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    mode: ControllerMode,
    opts?: { slowMs?: number },
  ): void;
  deleteObject(kind: WorkloadKind, namespace: string, name: string): void;
  /** Makes a namespace exist (a create into one that does not is 404, as on a real server). */
  ensureNamespace(name: string): void;
  /** A ConfigMap as stored (undefined when there is none). */
  // biome-ignore lint/suspicious/noExplicitAny: API objects are free-form JSON for the tests that read them
  getConfigMap(namespace: string, name: string): any | undefined;
  /**
   * Writes a ConfigMap's data as another actor would (`kubectl create`, `edit`, `replace`): a new
   * resourceVersion, created when absent; `null` deletes it.
   */
  putConfigMap(namespace: string, name: string, data: Record<string, string> | null): void;
  /**
   * A bad build for this workload: a rollout to a template that names one of these images never
   * becomes available (as "flap", its pods running but never Ready), with `how` "deadline" runs
   * out of its progress deadline (a Deployment), "crashloop" crash-loops, "pull" cannot pull its
   * image, `{ crashAfterMs }` settles Ready and then crashes, `{ unreadyAfterMs }` settles Ready
   * and then turns unready, `{ restartOnceAfterMs }` settles Ready, restarts each container once
   * that long after and runs Ready again; a rollout back to other images settles as its mode says.
   */
  failImages(
    kind: WorkloadKind,
    namespace: string,
    name: string,
    images: readonly string[],
    how?: BadBuild,
  ): void;
  /**
   * Every rollout the simulated controllers ran, in the order they started, as `Kind/ns/name`
   * with its start and end in one sequence (`end` unset: still rolling out): what tests judge
   * overlap from.
   */
  readonly rollouts: readonly RolloutRecord[];
  /** The pods the simulated kubelet keeps for a workload, as stored. */
  // biome-ignore lint/suspicious/noExplicitAny: API objects are free-form JSON for the tests that read them
  pods(namespace: string, labelSelector?: string): any[];
  faults: { add(rule: FaultRule): void; clear(): void };
  readonly log: RequestLogEntry[];
  clearLog(): void;
  // biome-ignore lint/suspicious/noExplicitAny: Events as created through the API, both groups
  readonly events: any[];
  rotateToken(newToken: string): void;
  /**
   * Enforces RBAC for the token's user from now on, as kube-apiserver does: after
   * authentication, before anything else. `undefined` (the default) allows everything.
   */
  setRbac(policy: RbacPolicy | undefined): void;
  /** Makes every resourceVersion up to now too old for a watch (as etcd compaction does): 410 Expired. */
  compact(): void;
  /** The current resourceVersion of the store (etcd's revision). */
  readonly resourceVersion: string;
  stop(): Promise<void>;
}

interface Runtime {
  server: Server;
  sockets: Set<Socket>;
  closers: Set<() => void>;
  log: RequestLogEntry[];
  faults: FaultSet;
  state: RouterState;
  rbac?: RbacPolicy;
}

/**
 * The authorizer only sees authenticated requests: a wrong token is left to the router's 401,
 * as kube-apiserver authenticates before it authorizes.
 */
function rbacDenial(rt: Runtime, ctx: Ctx): Status | undefined {
  if (!rt.rbac || !authorized(ctx, rt.state.token())) return undefined;
  return authorize(rt.rbac, ctx);
}

async function handle(rt: Runtime, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let ctx: Ctx | undefined;
  // Go's net/http stamps Date on every answer the apiserver writes (net/http/server.go writeHeader,
  // x/net http2/server.go writeChunk; the apiserver never sets it itself); node's own
  // stamp would be the real clock, not the one a test set.
  res.setHeader("date", rt.state.store.now().toUTCString());
  try {
    ctx = await readContext(req, res);
    rt.log.push(ctx.entry);
    // Before fault injection: a denied request never reaches the faulty server behind the filter.
    const denied = rbacDenial(rt, ctx);
    if (denied) return sendStatus(ctx, denied);
    const fault = rt.faults.take(ctx.method, ctx.path, ctx.search);
    if (fault && (await applyFault(ctx, fault)) === "done") return;
    const forceExpired = fault?.type === "expired";
    route(ctx, { ...rt.state, watch: { ...rt.state.watch, forceExpired } });
  } catch (e) {
    if (ctx)
      sendStatus(ctx, failure(500, `Internal error occurred: ${(e as Error).message}`, "InternalError", {}));
    else res.destroy();
  }
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : 0);
    });
  });
}

export async function startApiServer(opts: StartApiServerOptions = {}): Promise<SimApiServer> {
  const tls = opts.tls ?? generateTls();
  let token = opts.token ?? `sim-${crypto.randomUUID()}`;
  const store = new Store();
  if (opts.now) store.now = opts.now;
  const controllers = new Controllers(store, opts.stepMs ?? 10);
  const sockets = new Set<Socket>();
  const closers = new Set<() => void>();
  const server = createServer({ cert: tls.certPem, key: tls.keyPem });
  const rt: Runtime = {
    server,
    sockets,
    closers,
    log: [],
    faults: new FaultSet(),
    state: {
      store,
      token: () => token,
      url: "",
      configMaps: new ConfigMaps(store),
      events: [],
      watch: {
        bookmarkMs: opts.bookmarkMs ?? 1000,
        forceExpired: false,
        track: (close) => {
          closers.add(close);
          return () => closers.delete(close);
        },
      },
    },
  };
  server.on("secureConnection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => void handle(rt, req, res));
  const port = await listen(server);
  const url = `https://127.0.0.1:${port}`;
  rt.state.url = url;
  return makeHandle(rt, { url, tls, controllers, getToken: () => token, setToken: (t) => (token = t) });
}

interface HandleDeps {
  url: string;
  tls: TlsMaterial;
  controllers: Controllers;
  getToken(): string;
  setToken(t: string): void;
}

function requireObject(store: Store, kind: WorkloadKind, ns: string, name: string): JsonObject {
  const obj = store.get(kind, ns, name);
  if (!obj) throw new Error(`Cannot find ${kind} ${ns}/${name} in the simulated API server`);
  return obj;
}

/** A container or init container of the pod template, by name. */
function findContainer(obj: JsonObject, name: string): JsonObject | undefined {
  const pod = ((obj.spec as JsonObject).template as JsonObject).spec as JsonObject;
  const all = [...((pod.containers as JsonObject[]) ?? []), ...((pod.initContainers as JsonObject[]) ?? [])];
  return all.find((c) => c.name === name);
}

function makeHandle(rt: Runtime, d: HandleDeps): SimApiServer {
  const { store } = rt.state;
  let stopped: Promise<void> | undefined;
  return {
    url: d.url,
    caPem: d.tls.caPem,
    get token() {
      return d.getToken();
    },
    set token(t: string) {
      d.setToken(t);
    },
    kubeconfig: (o = {}) =>
      renderKubeconfig({
        server: o.server ?? d.url,
        token: o.token ?? d.getToken(),
        caPem: o.caPem ?? d.tls.caPem,
        insecure: o.insecure,
        namespace: o.namespace,
      }),
    addWorkload(w) {
      const obj = store.create(
        manifest(w),
        w.manager === undefined ? "kubectl-client-side-apply" : w.manager,
      );
      d.controllers.adopt(obj, {
        mode: w.mode ?? "healthy",
        slowMs: w.slowMs ?? 200,
        nodes: w.replicas ?? 3,
      });
      return clone(store.get(w.kind, w.namespace, w.name));
    },
    getObject: (kind, ns, name) => {
      const obj = store.get(kind, ns, name);
      return obj ? clone(obj) : undefined;
    },
    setAnnotations(kind, ns, name, a, o = {}) {
      const current = requireObject(store, kind, ns, name);
      const next = mergePatch(current, { metadata: { annotations: a } }) as JsonObject;
      store.updateMain(kind, ns, name, next, { manager: o.manager ?? "kubectl-annotate" });
    },
    setImage(kind, ns, name, container, image, o = {}) {
      const next = clone(requireObject(store, kind, ns, name));
      const target = findContainer(next, container);
      if (!target)
        throw new Error(`Cannot set the image of ${kind} ${ns}/${name}: no container "${container}"`);
      target.image = image;
      store.updateMain(kind, ns, name, next, { manager: o.manager ?? "kubectl-set" });
    },
    update(kind, ns, name, change, o) {
      const next = clone(requireObject(store, kind, ns, name));
      change(next);
      store.updateMain(kind, ns, name, next, { manager: o.manager });
    },
    setMode: (kind, ns, name, mode, o) => d.controllers.setMode(kind, ns, name, mode, o),
    failImages: (kind, ns, name, images, how) => d.controllers.failImages(kind, ns, name, images, how),
    rollouts: d.controllers.rollouts,
    pods: (ns, selector) =>
      store
        .list("Pod", ns)
        .filter((p) => labelsMatch(p, selector))
        .map((p) => clone(p)),
    deleteObject(kind, ns, name) {
      requireObject(store, kind, ns, name);
      d.controllers.forget(kind, ns, name);
      store.delete(kind, ns, name);
    },
    ensureNamespace: (name) => store.ensureNamespace(name),
    getConfigMap: (ns, name) => rt.state.configMaps.get(ns, name),
    putConfigMap(ns, name, data) {
      if (data === null) rt.state.configMaps.delete(ns, name);
      else {
        store.ensureNamespace(ns);
        rt.state.configMaps.put(ns, name, { metadata: {}, data });
      }
    },
    faults: { add: (rule) => rt.faults.add(rule), clear: () => rt.faults.clear() },
    get log() {
      return rt.log;
    },
    clearLog: () => {
      rt.log.length = 0;
    },
    get events() {
      return rt.state.events;
    },
    rotateToken: (t) => d.setToken(t),
    setRbac: (policy) => {
      rt.rbac = policy && { user: policy.user, rules: policy.rules.map((r) => ({ ...r })) };
    },
    compact: () => {
      store.compactedRv = store.rv;
    },
    get resourceVersion() {
      return String(store.rv);
    },
    stop: () => (stopped ??= shutdown(rt, d.controllers)),
  };
}

async function shutdown(rt: Runtime, controllers: Controllers): Promise<void> {
  controllers.stop();
  for (const close of [...rt.closers]) close();
  const closed = new Promise<void>((resolve) => rt.server.close(() => resolve()));
  // Hanging requests and idle keep-alive connections would hold close() open forever.
  for (const s of rt.sockets) s.destroy();
  await closed;
}
