// Event creation through core/v1 and events.k8s.io/v1 with the validation of kubernetes
// pkg/apis/core/validation/events.go. Field paths in errors use the internal
// names (involvedObject, message), as the real server reports them for both APIs.
import { randomBytes, randomUUID } from "node:crypto";
import { isObject, type JsonObject } from "./patch.ts";
import {
  alreadyExists,
  badRequest,
  type FieldError,
  invalid,
  type ResourceRef,
  type Status,
} from "./status.ts";

export type EventApi = "core" | "events.k8s.io";

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** metav1.MicroTime parses with layout 2006-01-02T15:04:05.000000Z07:00: exactly six fractional digits. */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const required = (field: string): FieldError => ({
  type: "FieldValueRequired",
  field,
  detail: "Required value",
});
const bad = (field: string, value: unknown, detail: string): FieldError => ({
  type: "FieldValueInvalid",
  field,
  detail: `Invalid value: ${JSON.stringify(value ?? "")}: ${detail}`,
});
const str = (v: unknown): string => (typeof v === "string" ? v : "");

export const eventResource = (api: EventApi): ResourceRef => ({
  plural: "events",
  group: api === "core" ? "" : api,
});

/** The fields validation looks at, read from either API's field names. */
function view(e: JsonObject, api: EventApi) {
  const core = api === "core";
  const involved = (core ? e.involvedObject : e.regarding) as JsonObject | undefined;
  return {
    eventTime: str(e.eventTime),
    involvedNamespace: str(involved?.namespace),
    controller: str(core ? e.reportingComponent : e.reportingController),
    controllerField: core ? "reportingComponent" : "reportingController",
    instance: str(e.reportingInstance),
    action: str(e.action),
    reason: str(e.reason),
    message: str(core ? e.message : e.note),
  };
}

/** Go's len() of a string counts UTF-8 bytes, and so does the apiserver's limit (the message says characters). */
function lengthLimit(field: string, value: string, limit: number): FieldError[] {
  return Buffer.byteLength(value, "utf8") > limit
    ? [bad(field, "", `can have at most ${limit} characters`)]
    : [];
}

/** legacyValidateEvent: applies to both APIs. */
function legacyErrors(e: JsonObject, api: EventApi, namespace: string): FieldError[] {
  const v = view(e, api);
  const errors: FieldError[] = [];
  const mismatch = () =>
    errors.push(bad("involvedObject.namespace", v.involvedNamespace, "does not match event.namespace"));
  if (!v.eventTime) {
    if (v.involvedNamespace ? v.involvedNamespace !== namespace : namespace !== "" && namespace !== "default")
      mismatch();
    return errors;
  }
  if (!v.involvedNamespace && namespace !== "default" && namespace !== "kube-system") mismatch();
  if (!v.controller) errors.push(required(v.controllerField));
  else if (!QUALIFIED_NAME.test(v.controller))
    errors.push(bad(v.controllerField, v.controller, "must be a qualified name"));
  if (!v.instance) errors.push(required("reportingInstance"));
  errors.push(...lengthLimit("reportingInstance", v.instance, 128));
  if (!v.action) errors.push(required("action"));
  errors.push(...lengthLimit("action", v.action, 128));
  if (!v.reason) errors.push(required("reason"));
  errors.push(...lengthLimit("reason", v.reason, 128));
  errors.push(...lengthLimit("message", v.message, 1024));
  return errors;
}

/** The strict checks that only events.k8s.io/v1 creation gets. */
function strictErrors(e: JsonObject): FieldError[] {
  const errors: FieldError[] = [];
  const name = str((e.metadata as JsonObject).name);
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253) errors.push(bad("metadata.name", name, SUBDOMAIN_MSG));
  const series = e.series as JsonObject | undefined;
  if (series && Number(series.count ?? 0) < 2) errors.push(bad("series.count", "", "should be at least 2"));
  if (series && !series.lastObservedTime) errors.push(required("series.lastObservedTime"));
  if (!e.eventTime) errors.push(required("eventTime"));
  if (e.type !== "Normal" && e.type !== "Warning")
    errors.push(bad("type", "", `has invalid value: ${str(e.type)}`));
  for (const f of ["deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedSource"]) {
    if (e[f] !== undefined && e[f] !== null && !(isObject(e[f]) && Object.keys(e[f]).length === 0)) {
      errors.push(bad(f, "", "needs to be unset"));
    }
  }
  if (e.deprecatedCount) errors.push(bad("deprecatedCount", "", "needs to be unset"));
  return errors;
}

/** Decoding problems the real server reports as 400 before validation runs. */
function decodeProblem(e: JsonObject, api: EventApi, namespace: string): Status | undefined {
  const version = api === "core" ? "v1" : "events.k8s.io/v1";
  if (e.eventTime !== undefined && e.eventTime !== null && !MICRO_TIME.test(str(e.eventTime))) {
    return badRequest(
      `Event in version "${version.split("/").pop()}" cannot be handled as a Event: parsing time ${JSON.stringify(e.eventTime)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse as RFC3339 with microseconds`,
    );
  }
  const meta = e.metadata as JsonObject;
  if (meta.namespace !== undefined && meta.namespace !== namespace) {
    return badRequest(
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  }
  return undefined;
}

const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

function generatedName(prefix: string): string {
  return prefix + Array.from(randomBytes(5), (b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join("");
}

export interface CreatedEvent {
  status: number;
  body: JsonObject | Status;
}

/** Validates and stores an Event; `existing` holds the events already created through this API. */
export function createEvent(
  body: unknown,
  ctx: { api: EventApi; namespace: string; existing: JsonObject[]; nextRv: () => string },
): CreatedEvent | Status {
  if (!isObject(body)) return badRequest("Object 'Kind' is missing in request body");
  const e: JsonObject = structuredClone(body);
  e.metadata ??= {};
  const meta = e.metadata as JsonObject;
  const problem = decodeProblem(e, ctx.api, ctx.namespace);
  if (problem) return problem;
  meta.namespace = ctx.namespace;
  const group = ctx.api === "core" ? "" : "events.k8s.io";
  if (!meta.name && meta.generateName) meta.name = generatedName(str(meta.generateName));
  if (!meta.name) {
    return invalid("Event", group, "", [
      {
        type: "FieldValueRequired",
        field: "metadata.name",
        detail: "Required value: name or generateName is required",
      },
    ]);
  }
  const errors = [...legacyErrors(e, ctx.api, ctx.namespace), ...(ctx.api === "core" ? [] : strictErrors(e))];
  if (errors.length) return invalid("Event", group, str(meta.name), errors);
  if (ctx.existing.some((x) => (x.metadata as JsonObject).name === meta.name)) {
    return alreadyExists(eventResource(ctx.api), str(meta.name));
  }
  e.apiVersion = ctx.api === "core" ? "v1" : "events.k8s.io/v1";
  e.kind = "Event";
  Object.assign(meta, {
    uid: randomUUID(),
    resourceVersion: ctx.nextRv(),
    creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  });
  return { status: 201, body: e };
}
