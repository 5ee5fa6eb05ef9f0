// GET, LIST, WATCH and PATCH of apps/v1 workloads.
import { type Ctx, sendJson, sendStatus } from "./http.ts";
import { labelsMatch } from "./labels.ts";
import { fieldManagerProblems, managerOrUserAgent } from "./managed-fields.ts";
import { RESOURCES, type ResourceInfo } from "./objects.ts";
import {
  applyJsonPatch,
  clone,
  decodeJsonPatch,
  isObject,
  type Json,
  type JsonObject,
  mergePatch,
  PatchError,
  strategicMerge,
} from "./patch.ts";
import {
  badRequest,
  failure,
  invalid,
  jsonPatchInvalid,
  methodNotAllowed,
  notFound,
  type Status,
  unsupportedMediaType,
} from "./status.ts";
import { type Store, WriteError } from "./store.ts";
import { isWatch, serveWatch, type WatchOptions } from "./watch.ts";

/** What the real server lists in its 415 message (apiserver installer.go order). */
const ACCEPTED_PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/apply-patch+yaml",
  "application/strategic-merge-patch+json",
];

export interface WorkloadRoute {
  res: ResourceInfo;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export function serveWorkloads(ctx: Ctx, store: Store, route: WorkloadRoute, watchOpts: WatchOptions) {
  const { res, namespace, name, subresource } = route;
  if (subresource && subresource !== "status")
    return sendStatus(ctx, failure(404, "the server could not find the requested resource", "NotFound", {}));
  if (ctx.method === "GET" && isWatch(ctx.query.watch)) {
    const byName = name ?? fieldSelectorName(ctx.query.fieldSelector);
    if (byName instanceof Error) return sendStatus(ctx, badRequest(byName.message));
    return serveWatch(ctx, store, { kind: res.kind, namespace, name: byName }, watchOpts);
  }
  if (ctx.method === "GET" && name) {
    const obj = namespace ? store.get(res.kind, namespace, name) : undefined;
    return obj ? sendJson(ctx, 200, obj) : sendStatus(ctx, notFound(res, name));
  }
  if (ctx.method === "GET") return list(ctx, store, route);
  if (ctx.method === "PATCH" && name && namespace && !subresource)
    return patch(ctx, store, route as Required<WorkloadRoute>);
  return sendStatus(ctx, methodNotAllowed());
}

/** Only metadata.name / metadata.namespace selectors are supported for workloads, as on a real server. */
function fieldSelectorName(selector: string | undefined): string | undefined | Error {
  if (!selector) return undefined;
  let name: string | undefined;
  for (const term of selector.split(",")) {
    const m = /^([\w.]+)(==|=)(.*)$/.exec(term);
    if (!m || (m[1] !== "metadata.name" && m[1] !== "metadata.namespace")) {
      return new Error(`field label not supported: ${m?.[1] ?? term}`);
    }
    if (m[1] === "metadata.name") name = m[3];
  }
  return name;
}

export { labelsMatch } from "./labels.ts";

function list(ctx: Ctx, store: Store, route: WorkloadRoute) {
  const byName = fieldSelectorName(ctx.query.fieldSelector);
  if (byName instanceof Error) return sendStatus(ctx, badRequest(byName.message));
  const items = store
    .list(route.res.kind, route.namespace, byName)
    .filter((o) => labelsMatch(o, ctx.query.labelSelector))
    .map(({ apiVersion: _a, kind: _k, ...rest }) => rest); // items of a typed list carry no kind
  sendJson(ctx, 200, {
    kind: `${route.res.kind}List`,
    apiVersion: "apps/v1",
    metadata: { resourceVersion: String(store.rv) },
    items,
  });
}

function parseJson(body: string): Json {
  try {
    return JSON.parse(body) as Json;
  } catch (e) {
    throw new PatchError("bad-request", `error decoding patch: ${(e as Error).message}`);
  }
}

function patched(current: JsonObject, type: string, body: string): JsonObject {
  if (type === "application/json-patch+json") {
    const ops = decodeJsonPatch(body);
    if (ops.length > 10000)
      throw new PatchError(
        "bad-request",
        "The allowed maximum operations in a JSON patch is 10000, got more",
      );
    const result = applyJsonPatch(current, ops);
    if (!isObject(result)) throw new PatchError("json-patch", "result is not an object");
    return result;
  }
  const patchDoc = parseJson(body);
  if (!isObject(patchDoc))
    throw new PatchError(
      "bad-request",
      "json: cannot unmarshal into Go value of type map[string]interface {}",
    );
  const result =
    type === "application/merge-patch+json"
      ? mergePatch(current, patchDoc)
      : strategicMerge(current, patchDoc);
  return result as JsonObject;
}

function patchFailure(e: PatchError): Status {
  if (e.kind === "json-patch") return jsonPatchInvalid();
  if (e.kind === "internal") return failure(500, e.message); // no reason: a plain error, as the real server answers
  return badRequest(e.message);
}

function patch(ctx: Ctx, store: Store, route: Required<WorkloadRoute>) {
  const type = (ctx.contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const supported = ACCEPTED_PATCH_TYPES.filter((t) => t !== "application/apply-patch+yaml");
  // Server-side apply is not simulated; the client must not depend on it.
  if (!supported.includes(type)) return sendStatus(ctx, unsupportedMediaType(ACCEPTED_PATCH_TYPES));
  const fieldManager = ctx.query.fieldManager;
  const problems = fieldManager ? fieldManagerProblems(fieldManager) : [];
  // ValidatePatchOptions answers before the object is read.
  if (problems.length > 0) return sendStatus(ctx, invalid("PatchOptions", "meta.k8s.io", "", problems));
  const current = store.get(route.res.kind, route.namespace, route.name);
  if (!current) return sendStatus(ctx, notFound(route.res, route.name));
  try {
    const candidate = patched(clone(current), type, ctx.body);
    if (ctx.query.dryRun === "All") return sendJson(ctx, 200, candidate);
    const manager = managerOrUserAgent(fieldManager, ctx.req.headers["user-agent"]);
    sendJson(ctx, 200, store.updateMain(route.res.kind, route.namespace, route.name, candidate, { manager }));
  } catch (e) {
    if (e instanceof PatchError) return sendStatus(ctx, patchFailure(e));
    if (e instanceof WriteError) return sendStatus(ctx, e.status);
    throw e;
  }
}

/** GET and LIST of the deployment controller's ReplicaSets (what kubectl rollout undo reads). */
export function serveReplicaSets(ctx: Ctx, store: Store, namespace?: string, name?: string, sub?: string) {
  const res = { plural: "replicasets", group: "apps" };
  if (sub)
    return sendStatus(ctx, failure(404, "the server could not find the requested resource", "NotFound", {}));
  if (ctx.method !== "GET") return sendStatus(ctx, methodNotAllowed());
  if (name) {
    const rs = namespace ? store.replicaSets.get(namespace, name) : undefined;
    return rs ? sendJson(ctx, 200, rs) : sendStatus(ctx, notFound(res, name));
  }
  const items = store.replicaSets
    .list(namespace)
    .filter((o) => labelsMatch(o, ctx.query.labelSelector))
    .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
  sendJson(ctx, 200, {
    kind: "ReplicaSetList",
    apiVersion: "apps/v1",
    metadata: { resourceVersion: String(store.rv) },
    items,
  });
}

export { RESOURCES };
