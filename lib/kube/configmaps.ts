// core/v1 ConfigMaps through the one HTTP layer: the store's read (NotFound is no object, and
// the answer's `Date` comes back with it), its create and its resourceVersion-guarded patch.
// Errors stay ApiErrors carrying the server's reason and message; only the caller decides that
// AlreadyExists or Conflict means "re-read and decide again".
import { checkConfigMap } from "../checks/checks.generated.ts";
import { formatPath, lazy, parseChecked } from "../issues.ts";
import { describeConfigMap } from "../workload.ts";
import { ApiError } from "./errors.ts";
import type { KubeHttp, KubeRequest } from "./http.ts";

export interface ConfigMapRef {
  namespace: string;
  name: string;
}

export interface StoredConfigMap {
  resourceVersion: string;
  data: Record<string, string>;
}

export interface ConfigMapApi {
  /** `object` undefined for NotFound; `date` is the answer's `Date` header as sent (null without one). */
  read(ref: ConfigMapRef): Promise<{ object?: StoredConfigMap; date: string | null }>;
  /** Sends the GET of read(ref) now; the next read of it takes the answer (KubeHttp.prefetch). */
  prefetch(ref: ConfigMapRef): void;
  /** POST; an existing name is ApiError AlreadyExists (409). */
  create(ref: ConfigMapRef, data: Record<string, string>): Promise<StoredConfigMap>;
  /** A merge patch of `data` with `metadata.resourceVersion` as its precondition (409 Conflict). */
  patch(
    ref: ConfigMapRef,
    resourceVersion: string,
    data: Record<string, string | null>,
  ): Promise<StoredConfigMap>;
}

/** A ConfigMap as the store reads it (compiled into lib/checks/checks.generated.ts). */
export const configMapSchema = lazy((z) =>
  z.object({
    metadata: z.object({ resourceVersion: z.string().check(z.minLength(1)) }),
    data: z.optional(z.nullable(z.record(z.string(), z.string()))),
  }),
);

const collection = (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps`;
const describe = (ref: ConfigMapRef) => describeConfigMap(ref);

function stored(req: KubeRequest, raw: unknown): StoredConfigMap {
  const r = parseChecked(checkConfigMap, configMapSchema, raw);
  if (!r.ok) {
    const fields = r.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("; ");
    throw new ApiError({
      method: req.method,
      url: req.path,
      target: req.target,
      code: 0,
      reason: "MalformedResponse",
      statusMessage: `unexpected ConfigMap (${fields})`,
    });
  }
  return { resourceVersion: r.value.metadata.resourceVersion, data: r.value.data ?? {} };
}

export function configMapApi(http: KubeHttp, fieldManager: string): ConfigMapApi {
  const send = async (req: KubeRequest) => stored(req, await http.json(req));
  const get = (ref: ConfigMapRef): KubeRequest => ({
    method: "GET",
    path: `${collection(ref.namespace)}/${encodeURIComponent(ref.name)}`,
    target: describe(ref),
  });
  return {
    prefetch: (ref) => http.prefetch(get(ref)),
    read: async (ref) => {
      let date: string | null = null;
      const req: KubeRequest = {
        ...get(ref),
        onHeaders: (h) => {
          date = h.get("date");
        },
      };
      try {
        return { object: await send(req), date };
      } catch (e) {
        if (e instanceof ApiError && e.code === 404 && e.reason === "NotFound") return { date };
        throw e;
      }
    },
    create: (ref, data) =>
      send({
        method: "POST",
        path: collection(ref.namespace),
        query: { fieldManager },
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: ref.name }, data },
        target: describe(ref),
      }),
    patch: (ref, resourceVersion, data) =>
      send({
        method: "PATCH",
        path: `${collection(ref.namespace)}/${encodeURIComponent(ref.name)}`,
        query: { fieldManager },
        body: { metadata: { resourceVersion }, data },
        contentType: "application/merge-patch+json",
        target: describe(ref),
      }),
  };
}
