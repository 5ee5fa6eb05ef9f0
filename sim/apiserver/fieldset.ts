// Field sets as structured-merge-diff (SMD, the library kube-apiserver tracks ownership with)
// keeps them in managedFields: the comparison of two objects into added, modified
// and removed paths (SMD typed/compare.go), and the FieldsV1 trie those paths are stored as
// (SMD fieldpath/serialize.go). The schema is the little a workload needs: which lists are
// associative and by which keys, which structs are atomic; every other list is atomic.
import { deepEqual, isObject, type Json, type JsonObject } from "./patch.ts";

/** A path is its elements (`f:name`, `k:{"name":"app"}`) joined by NUL, so a set is a Set<string>. */
export type FieldSet = Set<string>;
const SEP = "\u0000";
const keyOf = (path: string[]): string => path.join(SEP);

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/** Merge keys of the listType=map lists of k8s.io/api apps/v1 and core/v1 pod templates. */
const LIST_KEYS: Record<string, string[]> = {
  containers: ["name"],
  initContainers: ["name"],
  ephemeralContainers: ["name"],
  env: ["name"],
  ports: ["containerPort", "protocol"],
  volumeMounts: ["mountPath"],
  volumeDevices: ["devicePath"],
  volumes: ["name"],
  imagePullSecrets: ["name"],
  hostAliases: ["ip"],
  resourceClaims: ["name"],
  schedulingGates: ["name"],
  topologySpreadConstraints: ["topologyKey", "whenUnsatisfiable"],
  conditions: ["type"],
};

/** `spec.selector` of apps/v1 is an atomic struct: one leaf, `f:selector: {}`. */
const ATOMIC = new Set([keyOf(["f:spec", "f:selector"])]);

type Side = Json | undefined;
type NodeKind = "map" | "list" | "leaf";

/** A null side (a Go nil slice or map that is still serialised) takes the other side's kind. */
function nodeKind(l: Side, r: Side): NodeKind {
  const sides = [l, r].filter((v) => v !== undefined && v !== null);
  if (sides.every(isObject)) return "map";
  if (sides.every(Array.isArray)) return "list";
  return "leaf";
}

const empty = (v: Side): boolean =>
  v === undefined ||
  v === null ||
  (Array.isArray(v) ? v.length === 0 : isObject(v) && Object.keys(v).length === 0);

/** The `k:` element of a list item: its key fields, sorted by name, as compact JSON. */
function itemElement(item: JsonObject, keys: string[]): string {
  const key: JsonObject = {};
  for (const k of [...keys].sort()) if (item[k] !== undefined) key[k] = item[k] as Json;
  return `k:${JSON.stringify(key)}`;
}

function listKeys(path: string[], l: Side, r: Side): string[] | undefined {
  const last = path[path.length - 1] ?? "";
  const keys = last.startsWith("f:") ? LIST_KEYS[last.slice(2)] : undefined;
  const items = [...((l as Json[] | undefined) ?? []), ...((r as Json[] | undefined) ?? [])];
  return keys && items.every(isObject) ? keys : undefined;
}

function leaf(l: Side, r: Side, key: string, out: Comparison): void {
  if (l === undefined) out.added.add(key);
  else if (r === undefined) out.removed.add(key);
  else out.modified.add(key);
}

function compareItems(keys: string[], l: Side, r: Side, path: string[], out: Comparison): void {
  const index = (v: Side) =>
    new Map(((v as JsonObject[] | undefined) ?? []).map((item) => [itemElement(item, keys), item]));
  const left = index(l);
  const right = index(r);
  for (const pe of new Set([...left.keys(), ...right.keys()]))
    compareAt(left.get(pe), right.get(pe), [...path, pe], out);
}

/** Returns true when the node was compared as one leaf (an atomic or empty value). */
function compareNode(l: Side, r: Side, path: string[], out: Comparison): boolean {
  const key = keyOf(path);
  const kind = nodeKind(l, r);
  const bothEmpty = empty(l) && empty(r);
  if (kind === "map" && !ATOMIC.has(key) && !bothEmpty) {
    const lo = (l ?? {}) as JsonObject;
    const ro = (r ?? {}) as JsonObject;
    for (const k of new Set([...Object.keys(lo), ...Object.keys(ro)]))
      compareAt(lo[k], ro[k], [...path, `f:${k}`], out);
    return false;
  }
  const keys = kind === "list" && !bothEmpty ? listKeys(path, l, r) : undefined;
  if (keys) {
    compareItems(keys, l, r, path, out);
    return false;
  }
  leaf(l, r, key, out);
  return true;
}

function compareAt(l: Side, r: Side, path: string[], out: Comparison): void {
  if (deepEqual(l, r)) return; // identical values have nothing to compare, however large
  const wasLeaf = compareNode(l, r, path, out);
  // A map or list item that appears or disappears as a whole is itself a member: FieldsV1's `.`.
  if (!wasLeaf && path.length > 0) {
    if (l === undefined) out.added.add(keyOf(path));
    else if (r === undefined) out.removed.add(keyOf(path));
  }
}

/** What changed from `before` to `after`, as SMD's Compare sees it. */
export function compare(before: JsonObject, after: JsonObject): Comparison {
  const out: Comparison = { added: new Set(), modified: new Set(), removed: new Set() };
  compareAt(before, after, [], out);
  return out;
}

// --- FieldsV1 ---------------------------------------------------------------------------------

interface Node {
  member: boolean;
  children: Map<string, Node>;
}

/** SMD's path element order: fields by name first, then keyed items by their key values. */
function compareElements(a: string, b: string): number {
  const fa = a.startsWith("f:");
  const fb = b.startsWith("f:");
  if (fa !== fb) return fa ? -1 : 1;
  if (fa || !a.startsWith("k:") || !b.startsWith("k:")) return a < b ? -1 : a > b ? 1 : 0;
  const ka = Object.entries(JSON.parse(a.slice(2)) as JsonObject);
  const kb = Object.entries(JSON.parse(b.slice(2)) as JsonObject);
  for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
    const [na, va] = ka[i] as [string, Json];
    const [nb, vb] = kb[i] as [string, Json];
    if (na !== nb) return na < nb ? -1 : 1;
    if (va !== vb) return (va as string | number) < (vb as string | number) ? -1 : 1;
  }
  return ka.length - kb.length;
}

function emit(node: Node): JsonObject {
  const out: JsonObject = {};
  if (node.member && node.children.size > 0) out["."] = {};
  for (const pe of [...node.children.keys()].sort(compareElements))
    out[pe] = emit(node.children.get(pe) as Node);
  return out;
}

/** The FieldsV1 trie of a set: `{}` leaves, `.` where a member also has members below it. */
export function encodeFields(set: FieldSet): JsonObject {
  const root: Node = { member: false, children: new Map() };
  for (const path of set) {
    let node = root;
    for (const pe of path.split(SEP)) {
      const child = node.children.get(pe) ?? { member: false, children: new Map() };
      node.children.set(pe, child);
      node = child;
    }
    node.member = true;
  }
  return emit(root);
}

/** The set a FieldsV1 trie stands for, or undefined when it is not one. */
export function decodeFields(
  trie: unknown,
  path: string[] = [],
  out: FieldSet = new Set(),
): FieldSet | undefined {
  if (!isObject(trie)) return undefined;
  const entries = Object.entries(trie);
  if (path.length > 0 && (entries.length === 0 || "." in trie)) out.add(keyOf(path));
  for (const [pe, child] of entries) {
    if (pe === ".") continue;
    if (!/^[fkvi]:/.test(pe) || !decodeFields(child, [...path, pe], out)) return undefined;
  }
  return out;
}

/** Members of `set` that are not in any of `minus`. */
export function without(set: FieldSet, ...minus: FieldSet[]): FieldSet {
  return new Set([...set].filter((p) => !minus.some((m) => m.has(p))));
}
