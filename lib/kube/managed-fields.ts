// Who last changed a container's image, read from metadata.managedFields (structured-merge-diff
// merge/update.go; apimachinery pkg/util/managedfields/internal). An Update moves a field to the writer only when it changed
// the value, so the owner of `f:image` is the last manager that changed the image, not the last
// that wrote the object. Attribution is advisory (a client may send any managedFields), which is
// why a missing or unreadable entry is "unknown", never a guess. Pure; table-tested.
import { checkManagedFields } from "../checks/checks.generated.ts";
import { lazy, parseChecked } from "../issues.ts";

/** The field manager of every write this product makes; users name it in Argo CD and Flux settings. */
export const FIELD_MANAGER = "image-refresh";

export interface FieldOwner {
  manager: string;
  /** `Update` or `Apply`. */
  operation: string;
  /** RFC 3339, whole seconds, when that manager last changed something it owns. */
  time?: string;
}

/** metadata.managedFields as attribution reads it (compiled into lib/checks/checks.generated.ts). */
export const managedFieldsSchema = lazy((z) =>
  z.array(
    z.object({
      manager: z.optional(z.string()),
      operation: z.optional(z.string()),
      time: z.optional(z.string()),
      subresource: z.optional(z.string()),
      fieldsV1: z.optional(z.record(z.string(), z.unknown())),
    }),
  ),
);

type Trie = Record<string, unknown>;
const isTrie = (v: unknown): v is Trie => typeof v === "object" && v !== null && !Array.isArray(v);

/** The `k:` key of a list item whose merge key is `name`, however the server spelled the JSON. */
function keyNames(node: Trie, name: string): Trie | undefined {
  for (const [k, v] of Object.entries(node)) {
    if (!k.startsWith("k:") || !isTrie(v)) continue;
    try {
      const key = JSON.parse(k.slice(2)) as unknown;
      if (isTrie(key) && key.name === name) return v;
    } catch {
      // Not JSON: not a key this entry can own an image under.
    }
  }
  return undefined;
}

/** Whether this fieldsV1 trie owns the image of the named container of a pod template. */
function ownsImage(fields: Trie, list: "containers" | "initContainers", name: string): boolean {
  let node: unknown = fields;
  for (const step of ["f:spec", "f:template", "f:spec"]) {
    node = isTrie(node) ? node[step] : undefined;
  }
  const items = isTrie(node) ? node[`f:${list}`] : undefined;
  if (!isTrie(items)) return false;
  // An atomic list (some CRDs) has no item keys: its owner owns every container's image.
  const children = Object.keys(items).filter((k) => k !== ".");
  if (children.length === 0) return true;
  const item = keyNames(items, name);
  return isTrie(item) && isTrie(item["f:image"]);
}

/** Whether this fieldsV1 trie owns the named annotation of the object. */
function ownsAnnotation(fields: Trie, name: string): boolean {
  const meta = fields["f:metadata"];
  const annotations = isTrie(meta) ? meta["f:annotations"] : undefined;
  return isTrie(annotations) && isTrie(annotations[`f:${name}`]);
}

type List = "containers" | "initContainers";

/** Who owns what in one object's managedFields, read once for all the questions asked of it. */
export interface Owners {
  /**
   * The managers that own the image of `container` in the pod template (several when appliers
   * share it), main resource only.
   */
  image(container: string, list?: List): FieldOwner[];
  /** The managers that own annotation `name`: the last to change its value (a rollout undo that restores an old one takes it). */
  annotation(name: string): FieldOwner[];
}

/** Every answer is empty when managedFields are absent, unreadable or name nobody. */
export function ownersOf(managedFields: unknown): Owners {
  const parsed = parseChecked(checkManagedFields, managedFieldsSchema, managedFields);
  const list = parsed.ok ? parsed.value : [];
  return {
    image: (container, l = "containers") => ownersIn(list, (f) => ownsImage(f, l, container)),
    annotation: (name) => ownersIn(list, (f) => ownsAnnotation(f, name)),
  };
}

export function imageOwners(managedFields: unknown, container: string, list?: List): FieldOwner[] {
  return ownersOf(managedFields).image(container, list);
}

/** The owners of each named annotation, by name. */
export function annotationOwners(
  managedFields: unknown,
  names: readonly string[],
): Record<string, FieldOwner[]> {
  const owners = ownersOf(managedFields);
  return Object.fromEntries(names.map((n) => [n, owners.annotation(n)]));
}

type Entry = ReturnType<ReturnType<typeof managedFieldsSchema>["parse"]>[number];

function ownersIn(list: Entry[], owns: (fields: Trie) => boolean): FieldOwner[] {
  const owners: FieldOwner[] = [];
  for (const e of list) {
    if (e.subresource || !e.fieldsV1 || !e.manager) continue;
    if (!owns(e.fieldsV1)) continue;
    owners.push({
      manager: e.manager,
      operation: e.operation ?? "Update",
      ...(e.time ? { time: e.time } : {}),
    });
  }
  return owners;
}

/** The newest owner, the one a human reads as "who changed it" (entries are not ordered by time). */
export function lastOwner(owners: FieldOwner[]): FieldOwner | undefined {
  let best: FieldOwner | undefined;
  for (const o of owners) if (!best || (o.time ?? "") > (best.time ?? "")) best = o;
  return best;
}
