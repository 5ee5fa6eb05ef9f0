// metadata.managedFields as kube-apiserver keeps them for Update operations (create, PATCH,
// a controller's writes), from apimachinery pkg/util/managedfields/internal: the manager's name
// (apiserver handlers/create.go managerOrUserAgent), ownership moving only with a changed value
// (SMD merge/update.go), the time bumped only for a writer that changed something
// (managedfieldsupdater.go), resets and untracked objects (fieldmanager.go, skipnonapplied.go),
// and the serialised order (sortEncodedManagedFields). Server-side apply is not simulated.
import { type Comparison, compare, decodeFields, encodeFields, type FieldSet, without } from "./fieldset.ts";
import { isObject, type Json, type JsonObject } from "./patch.ts";
import type { FieldError } from "./status.ts";

/** capmanagers.go DefaultMaxUpdateManagers: more Update entries are folded into ancient-changes. */
export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES = "ancient-changes";
/** apimachinery validation.go FieldManagerMaxLength, in bytes. */
export const FIELD_MANAGER_MAX = 128;
/** What the deployment, daemonset and statefulset controllers are named by their User-Agent. */
export const CONTROLLER_MANAGER = "kube-controller-manager";

// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space only.
const PRINTABLE = /[\p{L}\p{M}\p{N}\p{P}\p{S} ]/u;
const utf8Length = (s: string): number => new TextEncoder().encode(s).length;

/** The manager of a non-apply write: `?fieldManager=`, else the User-Agent before its first `/`. */
export function managerOrUserAgent(fieldManager: string | undefined, userAgent: string | undefined): string {
  if (fieldManager) return fieldManager;
  let out = "";
  for (const ch of (userAgent ?? "").split("/")[0] ?? "") {
    if (!PRINTABLE.test(ch)) continue; // non-printables are dropped, not escaped
    if (utf8Length(out) + utf8Length(ch) > FIELD_MANAGER_MAX) break;
    out += ch;
  }
  return out;
}

/** ValidateFieldManager's complaints about a `?fieldManager=` value (apimachinery validation.go). */
export function fieldManagerProblems(fieldManager: string): FieldError[] {
  const field = "fieldManager";
  const problems: FieldError[] = [];
  if (utf8Length(fieldManager) > FIELD_MANAGER_MAX)
    problems.push({
      type: "FieldValueTooLong",
      field,
      detail: `Too long: may not be more than ${FIELD_MANAGER_MAX} bytes`,
    });
  for (const ch of fieldManager) {
    if (PRINTABLE.test(ch)) continue;
    const cp = (ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0");
    const detail = `Invalid value: ${JSON.stringify(fieldManager)}: invalid character U+${cp}`;
    problems.push({ type: "FieldValueInvalid", field, detail });
  }
  return problems;
}

/** Who writes: a manager through the main resource, or through a subresource such as status. */
export interface Writer {
  manager: string;
  subresource?: "status";
}

interface Entry {
  /** The entry as stored, less its fieldsV1, so fields this simulator does not model survive. */
  fields: JsonObject;
  set: FieldSet;
}

/**
 * BuildManagerIdentifier: the entry's JSON without fieldsType, fieldsV1 and time, and without
 * apiVersion for Apply, so manager + operation + subresource (+ apiVersion for Update).
 */
function identity(e: JsonObject): string {
  const id: JsonObject = { manager: e.manager ?? "", operation: e.operation ?? "" };
  if (e.operation !== "Apply" && e.apiVersion) id.apiVersion = e.apiVersion;
  if (e.subresource) id.subresource = e.subresource;
  return JSON.stringify(id);
}

/** A client's managedFields, or undefined when they do not decode (the server then keeps the live ones). */
function decodeEntries(v: Json | undefined): Entry[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: Entry[] = [];
  for (const raw of v) {
    if (!isObject(raw) || raw.fieldsType !== "FieldsV1") return undefined;
    const set = decodeFields(raw.fieldsV1 ?? {});
    if (!set) return undefined;
    const { fieldsV1: _f, ...fields } = raw;
    out.push({ fields, set });
  }
  return out;
}

/** isResetManagedFields: `[]` or `[{}]` sent by a non-apply write strips every entry. */
export function isReset(v: Json | undefined): boolean {
  if (!Array.isArray(v)) return false;
  return v.length === 0 || (v.length === 1 && isObject(v[0]) && Object.keys(v[0]).length === 0);
}

/** decodeLiveOrNew: a reset, else the request's entries when they decode and are not empty, else live's. */
function startingPoint(live: Json | undefined, requested: Json | undefined): Entry[] {
  if (isReset(requested)) return [];
  const mine = decodeEntries(requested);
  if (mine && mine.length > 0) return mine;
  return decodeEntries(live) ?? [];
}

/** What a write through `writer` compares: stripped metadata, then spec or status (the reset fields). */
function view(obj: JsonObject, writer: Writer): JsonObject {
  const m = (obj.metadata ?? {}) as JsonObject;
  // The apps status strategies reset spec and labels, not annotations: the deployment
  // controller's revision annotation, written with UpdateStatus, is the status entry's.
  if (writer.subresource === "status") {
    const metadata: JsonObject = m.annotations === undefined ? {} : { annotations: m.annotations as Json };
    return { metadata, status: (obj.status as Json) ?? {} };
  }
  const metadata: JsonObject = {};
  if (m.labels !== undefined) metadata.labels = m.labels as Json;
  if (m.annotations !== undefined) metadata.annotations = m.annotations as Json;
  return { metadata, spec: (obj.spec as Json) ?? {} };
}

/**
 * The object before its creation as the field manager sees it: a Go zero value, in which
 * struct fields exist, `omitempty` pointers, maps and lists do not, and `containers` (no
 * omitempty) is null. So `strategy` and `containers` get no `.`, labels and initContainers do.
 */
export function zeroObject(kind: string): JsonObject {
  const strategy = kind === "Deployment" ? "strategy" : "updateStrategy";
  return { metadata: {}, spec: { template: { metadata: {}, spec: { containers: null } }, [strategy]: {} } };
}

function moveOwnership(entries: Entry[], cmp: Comparison): Entry[] {
  const taken = [cmp.added, cmp.modified, cmp.removed];
  return entries
    .map((e) => ({ fields: e.fields, set: without(e.set, ...taken) }))
    .filter((e) => e.set.size > 0); // a manager left with nothing is dropped
}

const seconds = (v: Json | undefined): number => (v ? Math.floor(Date.parse(String(v)) / 1000) : 0);

/**
 * capmanagers.go: past MAX_UPDATE_MANAGERS Update entries, the oldest (by time, then identity)
 * are merged per apiVersion into one `ancient-changes` entry, which takes the newer time.
 */
function capUpdaters(entries: Entry[]): Entry[] {
  const updaters = entries.filter((e) => e.fields.operation !== "Apply");
  if (updaters.length <= MAX_UPDATE_MANAGERS) return entries;
  const oldest = [...updaters].sort(
    (a, b) =>
      seconds(a.fields.time) - seconds(b.fields.time) || (identity(a.fields) < identity(b.fields) ? -1 : 1),
  );
  const firsts = new Map<string, Entry>(); // per apiVersion, the oldest entry, kept as it is
  const merged = new Set<Entry>();
  let count = updaters.length;
  for (const e of oldest) {
    if (count <= MAX_UPDATE_MANAGERS) break;
    const version = String(e.fields.apiVersion ?? "");
    const ancient = {
      manager: ANCIENT_CHANGES,
      operation: "Update",
      apiVersion: version,
      fieldsType: "FieldsV1",
    };
    const bucketId = identity(ancient);
    const first = firsts.get(version);
    if (!first) {
      firsts.set(version, e);
      continue;
    }
    if (identity(e.fields) === bucketId) continue; // the bucket is never merged into itself
    // An existing bucket takes the merge; else the first entry of that version becomes it.
    let bucket = entries.find((x) => !merged.has(x) && identity(x.fields) === bucketId);
    if (!bucket) {
      bucket = first;
      bucket.fields = { ...ancient };
    }
    bucket.set = new Set([...bucket.set, ...e.set]);
    bucket.fields.time = e.fields.time ?? null; // the merged update is the newer one
    merged.add(e);
    count--;
  }
  return entries.filter((e) => !merged.has(e));
}

function compareEntries(a: JsonObject, b: JsonObject): number {
  const str = (v: Json | undefined) => String(v ?? "");
  for (const [x, y] of [
    [str(a.operation), str(b.operation)],
    [seconds(a.time), seconds(b.time)],
    [str(a.manager), str(b.manager)],
    [str(a.apiVersion), str(b.apiVersion)],
    [str(a.subresource), str(b.subresource)],
  ] as Array<[string | number, string | number]>) {
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export interface ManagedWrite {
  /** The stored object's managedFields (undefined on create). */
  live: Json | undefined;
  /** The managedFields the write carries (the patched object's). */
  requested: Json | undefined;
  before: JsonObject;
  after: JsonObject;
  writer: Writer;
  /** RFC 3339 in whole seconds. */
  now: string;
  creating: boolean;
}

/** The managedFields after one Update; an empty list means the object carries none. */
export function managedFieldsAfter(w: ManagedWrite): JsonObject[] {
  const start = w.creating ? [] : startingPoint(w.live, w.requested);
  // Updates never start tracking an existing object that has no entries (skipnonapplied.go).
  if (start.length === 0 && !w.creating) return [];
  const cmp = compare(view(w.before, w.writer), view(w.after, w.writer));
  const entries = moveOwnership(start, cmp);
  const changed = new Set([...cmp.added, ...cmp.modified]);
  if (changed.size > 0) {
    const fields: JsonObject = {
      manager: w.writer.manager,
      operation: "Update",
      apiVersion: "apps/v1",
      time: w.now,
      fieldsType: "FieldsV1",
      ...(w.writer.subresource ? { subresource: w.writer.subresource } : {}),
    };
    const id = identity(fields);
    const previous = entries.find((e) => identity(e.fields) === id);
    if (previous) {
      previous.set = new Set([...previous.set, ...changed]);
      previous.fields.time = w.now;
    } else entries.push({ fields, set: changed });
  }
  return capUpdaters(entries)
    .map((e) => ({ ...e.fields, fieldsV1: encodeFields(e.set) }))
    .sort(compareEntries)
    .map(order);
}

/** ManagedFieldsEntry's wire order: manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource. */
function order(e: JsonObject): JsonObject {
  const { manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource, ...rest } = e;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries({
    manager,
    operation,
    apiVersion,
    time,
    fieldsType,
    fieldsV1,
    subresource,
  }))
    if (v !== undefined) out[k] = v;
  return { ...out, ...rest };
}
