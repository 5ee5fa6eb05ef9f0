// core/v1 ConfigMaps as kube-apiserver serves them: GET, LIST, POST and PATCH (merge, strategic,
// JSON patch). A ConfigMap allows an unconditional update, so a patch without a resourceVersion
// always applies; one that sets metadata.resourceVersion is a precondition (409 Conflict when it
// is not current). POST of an existing name is 409 AlreadyExists; into a namespace that does not
// exist, 404 NotFound naming the namespace (the NamespaceLifecycle admission plugin).
// Not simulated: managedFields, watches, DELETE/PUT, binaryData, immutable.
import { randomUUID } from "node:crypto";
import { type Ctx, sendJson, sendStatus } from "./http.ts";
import {
  applyJsonPatch,
  clone,
  decodeJsonPatch,
  isObject,
  type JsonObject,
  mergePatch,
  PatchError,
  strategicMerge,
} from "./patch.ts";
import {
  alreadyExists,
  badRequest,
  conflict,
  type FieldError,
  failure,
  invalid,
  jsonPatchInvalid,
  methodNotAllowed,
  notFound,
  unsupportedMediaType,
} from "./status.ts";
import type { Store } from "./store.ts";

const RES = { plural: "configmaps", group: "" };
const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/apply-patch+yaml",
  "application/strategic-merge-patch+json",
];
// apimachinery validation.IsConfigMapKey and corev1 validation's MaxSecretSize.
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const MAX_SIZE = 1024 * 1024;

export class ConfigMaps {
  readonly #objects = new Map<string, JsonObject>();
  constructor(private readonly store: Store) {}

  get(ns: string, name: string): JsonObject | undefined {
    const o = this.#objects.get(`${ns}/${name}`);
    return o && clone(o);
  }

  list(ns?: string): JsonObject[] {
    return [...this.#objects.values()].filter((o) => !ns || meta(o).namespace === ns).map(clone);
  }

  /** Stores `obj` as the next version (create when absent); returns what the server answers. */
  put(ns: string, name: string, obj: JsonObject): JsonObject {
    const old = this.#objects.get(`${ns}/${name}`);
    const m = meta(obj);
    m.name = name;
    m.namespace = ns;
    m.uid = old ? String(meta(old).uid) : randomUUID();
    m.creationTimestamp = old ? String(meta(old).creationTimestamp) : stamp(this.store.now());
    this.store.rv += 1;
    m.resourceVersion = String(this.store.rv);
    const out: JsonObject = { kind: "ConfigMap", apiVersion: "v1", metadata: m };
    if (isObject(obj.data) && Object.keys(obj.data).length > 0) out.data = obj.data;
    this.#objects.set(`${ns}/${name}`, out);
    return clone(out);
  }

  delete(ns: string, name: string): boolean {
    return this.#objects.delete(`${ns}/${name}`);
  }
}

const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {});
const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** The field errors of ConfigMap validation that a client can trip. */
function problems(obj: JsonObject): FieldError[] {
  const data = obj.data ?? {};
  if (!isObject(data))
    return [{ type: "FieldValueInvalid", field: "data", detail: "Invalid value: must be a map" }];
  const errors: FieldError[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(data)) {
    if (!CONFIG_KEY.test(k) || k.length > 253)
      errors.push({
        type: "FieldValueInvalid",
        field: `data[${k}]`,
        detail: `Invalid value: "${k}": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
      });
    if (typeof v !== "string")
      errors.push({
        type: "FieldValueInvalid",
        field: `data[${k}]`,
        detail: "Invalid value: must be a string",
      });
    else size += k.length + v.length;
  }
  if (size > MAX_SIZE)
    errors.push({
      type: "FieldValueTooLong",
      field: "",
      detail: `Too long: must have at most ${MAX_SIZE} bytes`,
    });
  return errors;
}

export function serveConfigMaps(ctx: Ctx, store: Store, maps: ConfigMaps, ns?: string, name?: string) {
  if (ctx.method === "GET" && name) {
    const found = ns ? maps.get(ns, name) : undefined;
    return found ? sendJson(ctx, 200, found) : sendStatus(ctx, notFound(RES, name));
  }
  if (ctx.method === "GET")
    return sendJson(ctx, 200, {
      kind: "ConfigMapList",
      apiVersion: "v1",
      metadata: { resourceVersion: String(store.rv) },
      items: maps.list(ns).map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
    });
  if (ctx.method === "POST" && ns && !name) return create(ctx, store, maps, ns);
  if (ctx.method === "PATCH" && ns && name) return patch(ctx, maps, ns, name);
  return sendStatus(ctx, methodNotAllowed());
}

function create(ctx: Ctx, store: Store, maps: ConfigMaps, ns: string) {
  let body: unknown;
  try {
    body = JSON.parse(ctx.body);
  } catch (e) {
    return sendStatus(ctx, badRequest(`error decoding request body: ${(e as Error).message}`));
  }
  if (!isObject(body)) return sendStatus(ctx, badRequest("the body of the request is not an object"));
  const m = meta(body);
  const name = typeof m.name === "string" ? m.name : "";
  if (m.namespace !== undefined && m.namespace !== ns)
    return sendStatus(
      ctx,
      badRequest("the namespace of the provided object does not match the namespace sent on the request"),
    );
  if (!store.namespaces.has(ns)) return sendStatus(ctx, notFound({ plural: "namespaces", group: "" }, ns));
  if (!name)
    return sendStatus(
      ctx,
      invalid("ConfigMap", "", "", [
        {
          type: "FieldValueRequired",
          field: "metadata.name",
          detail: "Required value: name or generateName is required",
        },
      ]),
    );
  if (maps.get(ns, name)) return sendStatus(ctx, alreadyExists(RES, name));
  const errors = problems(body);
  if (errors.length) return sendStatus(ctx, invalid("ConfigMap", "", name, errors));
  const { resourceVersion: _rv, ...rest } = m;
  if (ctx.query.dryRun === "All") return sendJson(ctx, 201, { ...body, metadata: rest });
  sendJson(ctx, 201, maps.put(ns, name, { ...clone(body), metadata: clone(rest) }));
}

function patched(current: JsonObject, type: string, body: string): JsonObject {
  if (type === "application/json-patch+json") {
    const result = applyJsonPatch(current, decodeJsonPatch(body));
    if (!isObject(result)) throw new PatchError("json-patch", "result is not an object");
    return result;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new PatchError("bad-request", `error decoding patch: ${(e as Error).message}`);
  }
  if (!isObject(doc))
    throw new PatchError(
      "bad-request",
      "json: cannot unmarshal into Go value of type map[string]interface {}",
    );
  return (
    type === "application/merge-patch+json" ? mergePatch(current, doc) : strategicMerge(current, doc)
  ) as JsonObject;
}

function patch(ctx: Ctx, maps: ConfigMaps, ns: string, name: string) {
  const type = (ctx.contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (!PATCH_TYPES.includes(type) || type === "application/apply-patch+yaml")
    return sendStatus(ctx, unsupportedMediaType(PATCH_TYPES));
  const current = maps.get(ns, name);
  if (!current) return sendStatus(ctx, notFound(RES, name));
  let next: JsonObject;
  try {
    next = patched(current, type, ctx.body);
  } catch (e) {
    if (!(e instanceof PatchError)) throw e;
    return sendStatus(
      ctx,
      e.kind === "json-patch"
        ? jsonPatchInvalid()
        : e.kind === "internal"
          ? failure(500, e.message)
          : badRequest(e.message),
    );
  }
  const m = meta(next);
  if ((m.name !== undefined && m.name !== name) || (m.namespace !== undefined && m.namespace !== ns))
    return sendStatus(ctx, badRequest("the name of the object does not match the name on the URL"));
  // The patch was applied to the stored object, so the result carries its resourceVersion unless
  // the patch set one: a different one is a failed precondition.
  if (m.resourceVersion !== meta(current).resourceVersion) return sendStatus(ctx, conflict(RES, name));
  const errors = problems(next);
  if (errors.length) return sendStatus(ctx, invalid("ConfigMap", "", name, errors));
  const sameData = JSON.stringify(next.data ?? {}) === JSON.stringify(current.data ?? {});
  // A write that changes nothing keeps the resourceVersion (etcd3 store skips it).
  if (sameData || ctx.query.dryRun === "All") return sendJson(ctx, 200, sameData ? current : next);
  sendJson(ctx, 200, maps.put(ns, name, next));
}
