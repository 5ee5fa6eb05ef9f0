// Helpers for tests that drive the simulator over real HTTPS: a tiny authenticated client,
// a watch reader, and kubectl's rollout-status verdict (its Deployment, DaemonSet and StatefulSet
// viewers in kubectl pkg/polymorphichelpers/rollout_status.go) so a test can say "kubectl would
// call this settled" without running kubectl.
import { apiRootOf, WORKLOAD_KIND_TABLE } from "../../lib/workload.ts";
import { type SimApiServer, startApiServer, type WorkloadKind } from "./index.ts";

export interface SimResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: decoded API JSON for assertions
  json: any;
}

export interface RequestOpts {
  method?: string;
  body?: unknown;
  contentType?: string;
  token?: string | null;
  signal?: AbortSignal;
}

/** A kind's objects as the product addresses them: its row of the product's kind table. */
export const objectPath = (kind: WorkloadKind, ns: string, name?: string): string =>
  `${apiRootOf(kind)}/namespaces/${ns}/${WORKLOAD_KIND_TABLE[kind].plural}${name ? `/${name}` : ""}`;

export async function call(sim: SimApiServer, path: string, o: RequestOpts = {}): Promise<SimResponse> {
  const headers: Record<string, string> = {};
  const token = o.token === undefined ? sim.token : o.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (o.contentType) headers["content-type"] = o.contentType;
  const body =
    o.body === undefined ? undefined : typeof o.body === "string" ? o.body : JSON.stringify(o.body);
  const res = await fetch(`${sim.url}${path}`, {
    method: o.method ?? "GET",
    headers,
    body,
    signal: o.signal,
    tls: { ca: sim.caPem },
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const patch = (sim: SimApiServer, path: string, contentType: string, body: unknown) =>
  call(sim, path, { method: "PATCH", contentType, body });

// biome-ignore lint/suspicious/noExplicitAny: watch events carry free-form objects
export type WatchEvent = { type: string; object: any };

/** Reads watch events until `until` says stop, the stream ends, or `ms` passes. */
export async function readWatch(
  sim: SimApiServer,
  path: string,
  opts: { until?: (events: WatchEvent[]) => boolean; ms?: number } = {},
): Promise<{ status: number; events: WatchEvent[]; ended: boolean }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.ms ?? 3000);
  const events: WatchEvent[] = [];
  let status = 0;
  let ended = false;
  try {
    const res = await fetch(`${sim.url}${path}`, {
      headers: { authorization: `Bearer ${sim.token}` },
      signal: abort.signal,
      tls: { ca: sim.caPem },
    });
    status = res.status;
    const reader = res.body?.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    while (reader && !opts.until?.(events)) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) events.push(JSON.parse(line));
    }
  } catch (e) {
    if ((e as Error).name !== "AbortError") throw e;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return { status, events, ended };
}

// biome-ignore lint/suspicious/noExplicitAny: reads API JSON
type Obj = any;

/** kubectl rollout status' verdict for one object: done, or the message it would print. */
export function rolloutStatus(obj: Obj): { done: boolean; message: string } {
  const name = obj.metadata.name;
  const gen = obj.metadata.generation ?? 0;
  const st = obj.status ?? {};
  const observed = st.observedGeneration ?? 0;
  const wait = (message: string) => ({ done: false, message });
  if (obj.kind === "Deployment") {
    if (gen > observed) return wait("Waiting for deployment spec update to be observed...");
    const progressing = (st.conditions ?? []).find((c: Obj) => c.type === "Progressing");
    if (progressing?.reason === "ProgressDeadlineExceeded")
      throw new Error(`deployment "${name}" exceeded its progress deadline`);
    const r = obj.spec.replicas;
    const u = st.updatedReplicas ?? 0;
    if (r !== undefined && u < r)
      return wait(
        `Waiting for deployment "${name}" rollout to finish: ${u} out of ${r} new replicas have been updated...`,
      );
    if ((st.replicas ?? 0) > u)
      return wait(
        `Waiting for deployment "${name}" rollout to finish: ${(st.replicas ?? 0) - u} old replicas are pending termination...`,
      );
    if ((st.availableReplicas ?? 0) < u)
      return wait(
        `Waiting for deployment "${name}" rollout to finish: ${st.availableReplicas ?? 0} of ${u} updated replicas are available...`,
      );
    return { done: true, message: `deployment "${name}" successfully rolled out` };
  }
  if (obj.spec.updateStrategy?.type !== "RollingUpdate")
    throw new Error("rollout status is only available for RollingUpdate strategy type");
  if (obj.kind === "DaemonSet") {
    if (gen > observed) return wait("Waiting for daemon set spec update to be observed...");
    const d = st.desiredNumberScheduled ?? 0;
    if ((st.updatedNumberScheduled ?? 0) < d)
      return wait(
        `Waiting for daemon set "${name}" rollout to finish: ${st.updatedNumberScheduled ?? 0} out of ${d} new pods have been updated...`,
      );
    if ((st.numberAvailable ?? 0) < d)
      return wait(
        `Waiting for daemon set "${name}" rollout to finish: ${st.numberAvailable ?? 0} of ${d} updated pods are available...`,
      );
    return { done: true, message: `daemon set "${name}" successfully rolled out` };
  }
  if (observed === 0 || gen > observed) return wait("Waiting for statefulset spec update to be observed...");
  const r = obj.spec.replicas;
  if (r !== undefined && (st.readyReplicas ?? 0) < r)
    return wait(`Waiting for ${r - (st.readyReplicas ?? 0)} pods to be ready...`);
  const ru = obj.spec.updateStrategy.rollingUpdate;
  if (ru) {
    const p = ru.partition ?? 0;
    if (r !== undefined && (st.updatedReplicas ?? 0) < r - p)
      return wait(
        `Waiting for partitioned roll out to finish: ${st.updatedReplicas ?? 0} out of ${r - p} new pods have been updated...`,
      );
    return {
      done: true,
      message: `partitioned roll out complete: ${st.updatedReplicas ?? 0} new pods have been updated...`,
    };
  }
  if (st.updateRevision !== st.currentRevision)
    return wait(
      `waiting for statefulset rolling update to complete ${st.updatedReplicas ?? 0} pods at revision ${st.updateRevision}...`,
    );
  return {
    done: true,
    message: `statefulset rolling update complete ${st.currentReplicas ?? 0} pods at revision ${st.currentRevision}...`,
  };
}

/** Polls the stored object until `pred` holds; fails after `ms`. */
export async function waitFor(
  sim: SimApiServer,
  kind: WorkloadKind,
  ns: string,
  name: string,
  pred: (o: Obj) => boolean,
  ms = 3000,
): Promise<Obj> {
  const deadline = Date.now() + ms;
  for (;;) {
    const obj = sim.getObject(kind, ns, name);
    if (obj && pred(obj)) return obj;
    if (Date.now() > deadline)
      throw new Error(
        `Cannot observe the expected state of ${kind} ${ns}/${name} within ${ms} ms: ${JSON.stringify(obj?.status)}`,
      );
    await Bun.sleep(5);
  }
}

/** Whether kubectl would report the object as rolled out (a deadline error counts as not settled). */
export function settled(obj: Obj): boolean {
  try {
    return rolloutStatus(obj).done;
  } catch {
    return false;
  }
}

/**
 * Servers started by one test file, stopped together in its afterAll: `fresh()` starts one,
 * `stopAll()` stops every one it started.
 */
export function serverPool() {
  const servers: SimApiServer[] = [];
  return {
    async fresh(opts?: Parameters<typeof startApiServer>[0]): Promise<SimApiServer> {
      const s = await startApiServer(opts);
      servers.push(s);
      return s;
    },
    stopAll: () => Promise.all(servers.map((s) => s.stop())),
  };
}

/** One workload of each kind: Deployment apps/api (3 replicas), DaemonSet agents/agent, StatefulSet apps/db. */
export function seedOneOfEachKind(sim: SimApiServer): void {
  sim.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "api",
    containers: [{ name: "api", image: "myorg/api:stable" }],
    replicas: 3,
  });
  sim.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "agent",
    containers: [{ name: "agent", image: "myorg/agent:1" }],
  });
  sim.addWorkload({
    kind: "StatefulSet",
    namespace: "apps",
    name: "db",
    containers: [{ name: "db", image: "myorg/db:1" }],
  });
}

/**
 * A maker of fresh workloads (app + sidecar containers, an init container) with unique names, so
 * tests that write never see each other's writes.
 */
export function workloadMaker(sim: SimApiServer) {
  let n = 0;
  return (kind: WorkloadKind = "Deployment", annotations?: Record<string, string>) => {
    const name = `w${++n}`;
    sim.addWorkload({
      kind,
      namespace: "apps",
      name,
      annotations,
      containers: [
        { name: "app", image: "myorg/app:1" },
        { name: "sidecar", image: "myorg/sidecar:1" },
      ],
      initContainers: [{ name: "init", image: "myorg/init:1" }],
    });
    return { name, path: objectPath(kind, "apps", name), get: () => sim.getObject(kind, "apps", name) };
  };
}
