// metav1.Status bodies with the exact reasons and messages of the real API server
// (apimachinery pkg/api/errors, apiserver responsewriters), so clients parse real shapes.

export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** A resource as errors name it: plural + group, e.g. `deployments.apps`. */
export interface ResourceRef {
  plural: string;
  group: string;
}

export const qualified = (r: ResourceRef): string => (r.group ? `${r.plural}.${r.group}` : r.plural);

function details(r: ResourceRef, name: string): StatusDetails {
  // Empty fields are omitted on the wire, so the core group has no `group` key.
  return r.group ? { name, group: r.group, kind: r.plural } : { name, kind: r.plural };
}

/** `details` is a pointer in Go: absent when the constructor sets none, `{}` when it sets an empty one. */
export function failure(code: number, message: string, reason?: string, det?: StatusDetails): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    ...(reason ? { reason } : {}),
    ...(det ? { details: det } : {}),
    code,
  };
}

export const unauthorized = (): Status => failure(401, "Unauthorized", "Unauthorized");

export const notFound = (r: ResourceRef, name: string): Status =>
  failure(404, `${qualified(r)} "${name}" not found`, "NotFound", details(r, name));

export const pathNotFound = (): Status =>
  failure(404, "the server could not find the requested resource", "NotFound", {});

export const conflict = (r: ResourceRef, name: string): Status =>
  failure(
    409,
    `Operation cannot be fulfilled on ${qualified(r)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    "Conflict",
    details(r, name),
  );

export const alreadyExists = (r: ResourceRef, name: string): Status =>
  failure(409, `${qualified(r)} "${name}" already exists`, "AlreadyExists", details(r, name));

export const badRequest = (message: string): Status => failure(400, message, "BadRequest", {});

export const methodNotAllowed = (): Status =>
  failure(405, "the server does not allow this method on the requested resource", "MethodNotAllowed", {});

export const unsupportedMediaType = (accepted: string[]): Status =>
  failure(
    415,
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
    "UnsupportedMediaType",
    {},
  );

/** JSON Patch apply failures: NewGenericServerResponse(422) discards the engine's message. */
export const jsonPatchInvalid = (): Status =>
  failure(422, "the server rejected our request due to an error in our request", "Invalid", {});

/** A field error in the validation package's wording (`field: Required value`). */
export interface FieldError {
  type:
    | "FieldValueRequired"
    | "FieldValueInvalid"
    | "FieldValueNotSupported"
    | "FieldValueTooLong"
    | "FieldValueDuplicate";
  field: string;
  detail: string;
}

function fieldErrorText(e: FieldError): string {
  return e.field ? `${e.field}: ${e.detail}` : e.detail;
}

export function invalid(kind: string, group: string, name: string, errors: FieldError[]): Status {
  const subject = group ? `${kind}.${group} "${name}"` : `${kind} "${name}"`;
  const texts = errors.map(fieldErrorText);
  const summary = texts.length === 1 ? texts[0] : `[${texts.join(", ")}]`;
  const causes = errors.map((e) => ({ reason: e.type, message: e.detail, field: e.field }));
  const det: StatusDetails = group ? { name, group, kind, causes } : { name, kind, causes };
  return failure(422, `${subject} is invalid: ${summary}`, "Invalid", det);
}

export const expired = (rv: string, current: string): Status =>
  failure(410, `too old resource version: ${rv} (${current})`, "Expired", {});

/** A Status for an injected fault: the reason defaults to the one the real server uses for that code. */
export function forCode(code: number, reason?: string, message?: string): Status {
  const defaults: Record<number, [string, string]> = {
    400: ["BadRequest", "bad request"],
    401: ["Unauthorized", "Unauthorized"],
    403: ["Forbidden", "forbidden"],
    404: ["NotFound", "the server could not find the requested resource"],
    409: ["Conflict", "the object has been modified"],
    410: ["Expired", "The resourceVersion for the provided watch is too old."],
    422: ["Invalid", "the server rejected our request due to an error in our request"],
    429: ["TooManyRequests", "Too many requests, please try again later."],
    500: ["InternalError", "Internal error occurred: injected fault"],
    503: ["ServiceUnavailable", "apiserver is shutting down"],
    504: ["Timeout", "Timeout: request did not complete within the allotted timeout"],
  };
  const [r, m] = defaults[code] ?? ["", `injected fault ${code}`];
  return failure(code, message ?? m, reason ?? (r || undefined), {});
}
