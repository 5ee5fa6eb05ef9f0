// The three PATCH engines of the API server, reproduced closely enough that a client written
// against this simulator behaves the same against a real cluster:
// RFC 7386 merge patch, strategic merge patch (apimachinery strategicpatch) and RFC 6902
// JSON Patch with the quirks of evanphx/json-patch v4, the engine the apiserver vendors.
// Hand-written because the product ships without runtime dependencies beyond zod/OTel.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

export const isObject = (v: unknown): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);
export const clone = <T>(v: T): T => structuredClone(v);

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
}

/** A patch that the engine cannot apply; `kind` selects the HTTP answer the real server gives. */
export class PatchError extends Error {
  constructor(
    readonly kind: "bad-request" | "json-patch" | "internal",
    message: string,
  ) {
    super(message);
  }
}

// --- RFC 7386 -------------------------------------------------------------------------------

export function mergePatch(target: unknown, patch: unknown): Json {
  if (!isObject(patch)) return clone(patch as Json);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// --- strategic merge patch ------------------------------------------------------------------

/**
 * patchMergeKey of the lists that merge element-wise in the types we serve (kubernetes/api
 * struct tags). Keyed by field name, which is unambiguous within apps/v1 workloads.
 */
const MERGE_KEYS: Record<string, string> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  imagePullSecrets: "name",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  ports: "containerPort",
  conditions: "type",
  ownerReferences: "uid",
  hostAliases: "ip",
  topologySpreadConstraints: "topologyKey",
};

const goMap = (m: JsonObject): string =>
  `map[${Object.keys(m)
    .sort()
    .map((k) => `${k}:${typeof m[k] === "object" ? JSON.stringify(m[k]) : String(m[k])}`)
    .join(" ")}]`;

/** Removes directives from a value that is inserted as a whole (a new key or list element). */
function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, val] of Object.entries(v)) {
    if (k.startsWith("$") || val === null) continue;
    out[k] = stripDirectives(val);
  }
  return out;
}

function mergeList(original: Json[], patch: Json[], key: string): Json[] {
  if (patch.some((e) => isObject(e) && e.$patch === "replace")) {
    return patch.filter((e) => !(isObject(e) && e.$patch === "replace")).map(stripDirectives);
  }
  const out = clone(original);
  for (const element of patch) {
    if (!isObject(element))
      throw new PatchError("internal", `unable to find api field in struct for list ${key}`);
    if (!(key in element)) {
      throw new PatchError("internal", `map: ${goMap(element)} does not contain declared merge key: ${key}`);
    }
    const at = out.findIndex((o) => isObject(o) && deepEqual(o[key], element[key]));
    if (element.$patch === "delete") {
      if (at >= 0) out.splice(at, 1);
    } else if (at >= 0) {
      out[at] = strategicMerge(out[at], element);
    } else {
      // apimachinery mergeSliceWithoutSpecialElements: an unknown key is appended, not rejected.
      out.push(stripDirectives(element));
    }
  }
  return out;
}

/** Orders list elements as `$setElementOrder/<list>` says; elements it does not name keep their order, after. */
function applyElementOrder(list: Json[], order: Json, key: string): Json[] {
  if (!Array.isArray(order)) throw new PatchError("bad-request", "invalid $setElementOrder: not a list");
  const rank = (e: Json): number =>
    isObject(e) ? order.findIndex((o) => isObject(o) && deepEqual(o[key], e[key])) : order.indexOf(e);
  const named = list.filter((e) => rank(e) >= 0).sort((a, b) => rank(a) - rank(b));
  return [...named, ...list.filter((e) => rank(e) < 0)];
}

function mergeField(out: JsonObject, k: string, v: Json): void {
  const old = out[k];
  const key = MERGE_KEYS[k];
  if (v === null) delete out[k];
  else if (Array.isArray(v) && key && Array.isArray(old)) out[k] = mergeList(old, v, key);
  else if (Array.isArray(v) && key) out[k] = mergeList([], v, key);
  else if (isObject(v) && isObject(old)) out[k] = strategicMerge(old, v);
  else out[k] = stripDirectives(v);
}

function applyListDirectives(out: JsonObject, patch: JsonObject): void {
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$deleteFromPrimitiveList/")) {
      const list = k.slice("$deleteFromPrimitiveList/".length);
      const current = out[list];
      if (Array.isArray(current) && Array.isArray(v))
        out[list] = current.filter((e) => !v.some((d) => deepEqual(d, e)));
    } else if (k.startsWith("$setElementOrder/")) {
      const list = k.slice("$setElementOrder/".length);
      const current = out[list];
      if (Array.isArray(current)) out[list] = applyElementOrder(current, v, MERGE_KEYS[list] ?? "name");
    }
  }
}

export function strategicMerge(original: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const directive = patch.$patch;
  if (directive === "replace") return stripDirectives(patch);
  if (directive !== undefined && directive !== "merge" && directive !== "delete") {
    throw new PatchError("bad-request", `Unknown patch type: ${String(directive)} in map: ${goMap(patch)}`);
  }
  let out: JsonObject = isObject(original) ? clone(original) : {};
  const retain = patch.$retainKeys;
  if (Array.isArray(retain))
    out = Object.fromEntries(Object.entries(out).filter(([k]) => retain.includes(k)));
  for (const [k, v] of Object.entries(patch)) if (!k.startsWith("$")) mergeField(out, k, v);
  applyListDirectives(out, patch);
  return out;
}

// --- RFC 6902, evanphx/json-patch v4 semantics ------------------------------------------------

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: Json;
  hasValue: boolean;
}

/** Mirrors json.Unmarshal into jsonpatch.Patch: an array of objects, else a 400. */
export function decodeJsonPatch(body: string): Operation[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    throw new PatchError("bad-request", `invalid character in JSON patch: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed)) {
    const t = isObject(parsed) ? "object" : parsed === null ? "null" : typeof parsed;
    throw new PatchError("bad-request", `json: cannot unmarshal ${t} into Go value of type jsonpatch.Patch`);
  }
  return parsed.map((o) => {
    if (!isObject(o))
      throw new PatchError("bad-request", "json: cannot unmarshal into Go value of type jsonpatch.Operation");
    return {
      op: String(o.op ?? ""),
      path: typeof o.path === "string" ? o.path : "",
      ...(typeof o.from === "string" ? { from: o.from } : {}),
      value: o.value as Json,
      hasValue: "value" in o,
    };
  });
}

function tokens(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new PatchError("json-patch", `invalid pointer ${pointer}`);
  // RFC 6901 order: ~1 first, then ~0, so "~01" decodes to "~1" and not to "/".
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

const fail = (msg: string): never => {
  throw new PatchError("json-patch", msg);
};

interface Slot {
  parent: JsonObject | Json[];
  key: string;
}

function locate(doc: Json, pointer: string): Slot {
  const parts = tokens(pointer);
  const last = parts.pop() ?? fail("cannot operate on the document root");
  let node: Json | undefined = doc;
  for (const p of parts) {
    if (Array.isArray(node)) node = node[arrayIndex(node, p, false)];
    else if (isObject(node)) node = node[p];
    else node = undefined;
    if (node === undefined) fail(`doc is missing path: ${pointer}`);
  }
  if (!Array.isArray(node) && !isObject(node)) return fail(`doc is missing path: ${pointer}`);
  return { parent: node, key: last };
}

function arrayIndex(list: Json[], token: string, forInsert: boolean): number {
  if (!/^-?\d+$/.test(token)) return fail(`invalid array index: ${token}`);
  let i = Number(token);
  const size = forInsert ? list.length + 1 : list.length;
  if (i < 0) i += size; // evanphx v4 accepts negative indices, counted from the end
  if (i < 0 || i >= size) fail(`index out of range: ${token}`);
  return i;
}

function get({ parent, key }: Slot): Json | undefined {
  if (Array.isArray(parent)) return parent[arrayIndex(parent, key, false)];
  return Object.hasOwn(parent, key) ? parent[key] : undefined;
}

function add({ parent, key }: Slot, value: Json): void {
  if (!Array.isArray(parent)) parent[key] = value;
  else if (key === "-") parent.push(value);
  else parent.splice(arrayIndex(parent, key, true), 0, value);
}

function remove(slot: Slot): Json {
  const { parent, key } = slot;
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, key, false), 1)[0] as Json;
  if (!Object.hasOwn(parent, key)) fail(`unable to remove nonexistent key: ${key}`);
  const old = parent[key] as Json;
  delete parent[key];
  return old;
}

function replace({ parent, key }: Slot, value: Json): void {
  // v4 quirk kept on purpose: replacing a missing object member succeeds like an add.
  if (Array.isArray(parent)) parent[arrayIndex(parent, key, false)] = value;
  else parent[key] = value;
}

function applyOne(doc: Json, op: Operation) {
  const value = (): Json => (op.hasValue ? clone(op.value as Json) : fail(`missing value for ${op.op}`));
  const from = (): Slot => locate(doc, op.from ?? fail(`missing from for ${op.op}`));
  switch (op.op) {
    case "add":
      return add(locate(doc, op.path), value());
    case "remove":
      return void remove(locate(doc, op.path));
    case "replace":
      return replace(locate(doc, op.path), value());
    case "move":
      return add(locate(doc, op.path), remove(from()));
    case "copy":
      return add(locate(doc, op.path), clone(get(from()) ?? fail(`copy from missing path: ${op.from}`)));
    case "test": {
      const actual = op.path === "" ? doc : get(locate(doc, op.path));
      const expected = op.hasValue ? op.value : null;
      if (actual === undefined ? expected !== null : !deepEqual(actual, expected))
        fail("testing value failed");
      return;
    }
    default:
      fail(`Unexpected kind: ${op.op}`);
  }
}

export function applyJsonPatch(doc: Json, ops: Operation[]): Json {
  const out = clone(doc);
  for (const op of ops) applyOne(out, op);
  return out;
}

export type { Json, JsonObject };
