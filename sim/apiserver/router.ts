// Maps a request path to its handler: discovery, workloads and events, after the bearer
// token check. Unknown paths answer the real server's generic 404 Status.
import { type ConfigMaps, serveConfigMaps } from "./configmaps.ts";
import { discovery } from "./discovery.ts";
import { createEvent, type EventApi } from "./events.ts";
import { type Ctx, sendJson, sendStatus } from "./http.ts";
import { labelsMatch } from "./labels.ts";
import { byPlural } from "./objects.ts";
import type { JsonObject } from "./patch.ts";
import { badRequest, methodNotAllowed, notFound, pathNotFound, unauthorized } from "./status.ts";
import type { Store } from "./store.ts";
import { isWatch, serveWatch, type WatchOptions } from "./watch.ts";
import { serveReplicaSets, serveWorkloads } from "./workloads.ts";

export interface RouterState {
  store: Store;
  configMaps: ConfigMaps;
  token: () => string;
  url: string;
  events: JsonObject[];
  watch: WatchOptions;
}

const WORKLOAD_PATH = /^\/apis\/apps\/v1\/(?:namespaces\/([^/]+)\/)?([a-z]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;
const CONFIGMAP_PATH = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?configmaps(?:\/([^/]+))?$/;
const POD_PATH = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods(?:\/([^/]+))?$/;
const NAMESPACE_PATH = /^\/api\/v1\/namespaces(?:\/([^/]+))?$/;
const EVENT_PATH =
  /^\/(?:api\/v1|apis\/events\.k8s\.io\/v1)\/(?:namespaces\/([^/]+)\/)?events(?:\/([^/]+))?$/;

/** The request carries the simulator's bearer token (authentication, before any authorizer). */
export function authorized(ctx: Ctx, token: string): boolean {
  const header = ctx.req.headers.authorization ?? "";
  const m = /^Bearer\s+(.+)$/i.exec(header);
  return !!m && m[1]?.trim() === token;
}

export function route(ctx: Ctx, state: RouterState) {
  if (!authorized(ctx, state.token())) return sendStatus(ctx, unauthorized());
  const doc = ctx.method === "GET" ? discovery(ctx.path, new URL(state.url).host) : undefined;
  if (doc) return sendJson(ctx, 200, doc);
  const w = WORKLOAD_PATH.exec(ctx.path);
  if (w?.[2] === "replicasets") return serveReplicaSets(ctx, state.store, w[1], w[3], w[4]);
  const res = w && byPlural(w[2] ?? "");
  if (w && res) {
    const [, namespace, , name, subresource] = w;
    return serveWorkloads(ctx, state.store, { res, namespace, name, subresource }, state.watch);
  }
  const cm = CONFIGMAP_PATH.exec(ctx.path);
  if (cm) return serveConfigMaps(ctx, state.store, state.configMaps, cm[1], cm[2]);
  const pod = POD_PATH.exec(ctx.path);
  if (pod) return servePods(ctx, state, pod[1], pod[2]);
  const ns = NAMESPACE_PATH.exec(ctx.path);
  if (ns) return serveNamespaces(ctx, state.store, ns[1]);
  const e = EVENT_PATH.exec(ctx.path);
  if (e)
    return serveEvents(ctx, state, ctx.path.startsWith("/api/v1") ? "core" : "events.k8s.io", e[1], e[2]);
  sendStatus(ctx, pathNotFound());
}

/** GET, LIST and WATCH of the simulated kubelet's pods (read-only, like the ReplicaSets). */
function servePods(ctx: Ctx, state: RouterState, namespace?: string, name?: string) {
  const { store } = state;
  if (ctx.method !== "GET") return sendStatus(ctx, methodNotAllowed());
  const labelSelector = ctx.query.labelSelector;
  if (isWatch(ctx.query.watch))
    return serveWatch(ctx, store, { kind: "Pod", namespace, name, labelSelector }, state.watch);
  if (name) {
    const found = namespace ? store.get("Pod", namespace, name) : undefined;
    return found ? sendJson(ctx, 200, found) : sendStatus(ctx, notFound({ plural: "pods", group: "" }, name));
  }
  const items = store
    .list("Pod", namespace)
    .filter((o) => labelsMatch(o, labelSelector))
    .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  sendJson(ctx, 200, {
    kind: "PodList",
    apiVersion: "v1",
    metadata: { resourceVersion: String(store.rv) },
    items,
  });
}

function serveNamespaces(ctx: Ctx, store: Store, name?: string) {
  if (ctx.method !== "GET") return sendStatus(ctx, methodNotAllowed());
  if (!name) {
    const items = [...store.namespaces.values()].map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    return sendJson(ctx, 200, {
      kind: "NamespaceList",
      apiVersion: "v1",
      metadata: { resourceVersion: String(store.rv) },
      items,
    });
  }
  const found = store.namespaces.get(name);
  return found
    ? sendJson(ctx, 200, found)
    : sendStatus(ctx, notFound({ plural: "namespaces", group: "" }, name));
}

function serveEvents(ctx: Ctx, state: RouterState, api: EventApi, namespace?: string, name?: string) {
  const apiVersion = api === "core" ? "v1" : "events.k8s.io/v1";
  const mine = state.events.filter((e) => e.apiVersion === apiVersion);
  const inNs = mine.filter((e) => !namespace || (e.metadata as JsonObject).namespace === namespace);
  if (ctx.method === "GET" && !name) {
    const items = inNs.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    return sendJson(ctx, 200, {
      kind: "EventList",
      apiVersion,
      metadata: { resourceVersion: String(state.store.rv) },
      items,
    });
  }
  if (ctx.method === "GET" && name) {
    const found = inNs.find((e) => (e.metadata as JsonObject).name === name);
    const what = api === "core" ? "events" : "events.events.k8s.io";
    return found
      ? sendJson(ctx, 200, found)
      : sendStatus(ctx, {
          ...pathNotFound(),
          message: `${what} "${name}" not found`,
          details: { name, ...(api === "core" ? {} : { group: "events.k8s.io" }), kind: "events" },
        });
  }
  if (ctx.method !== "POST" || name || !namespace) return sendStatus(ctx, methodNotAllowed());
  let body: unknown;
  try {
    body = JSON.parse(ctx.body);
  } catch (err) {
    return sendStatus(ctx, badRequest(`error decoding request body: ${(err as Error).message}`));
  }
  const existing = inNs;
  const nextRv = () => String(++state.store.rv);
  const result = createEvent(body, { api, namespace, existing, nextRv });
  if ("kind" in result && result.kind === "Status") return sendStatus(ctx, result);
  const created = result as { status: number; body: JsonObject };
  state.events.push(created.body);
  sendJson(ctx, created.status, created.body);
}
