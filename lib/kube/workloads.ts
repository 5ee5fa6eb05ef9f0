import { describeWorkload } from "../workload.ts";
import { type ConfigMapApi, configMapApi } from "./configmaps.ts";
import { ApiError } from "./errors.ts";
import { createKubeHttp, type HttpOptions, type KubeHttp, type KubeRequest } from "./http.ts";
import type { Connection } from "./kubeconfig.ts";
import {
  collectionPath,
  type ObjectRef,
  objectPath,
  parseWorkload,
  type Workload,
  WorkloadParseError,
} from "./objects.ts";
import { type PodApi, podApi } from "./pods.ts";
import { type WatchEvent, watchEvents } from "./watch.ts";

export type { ObjectRef, Workload, WorkloadKind } from "./objects.ts";

export interface WatchOptions {
  resourceVersion: string;
  timeoutSeconds: number;
  signal: AbortSignal;
}

export interface KubeClient {
  get(ref: ObjectRef): Promise<Workload>;
  /** Sends the GET of `ref` now; the next get or getDated of it takes the answer (KubeHttp.prefetch). */
  prefetch(ref: ObjectRef): void;
  /** A GET that also returns the answer's `Date` header as sent (null when there is none). */
  getDated(ref: ObjectRef): Promise<{ workload: Workload; date: string | null }>;
  /** application/merge-patch+json: maps merge, `null` removes a key (absent is fine). */
  mergePatch(ref: ObjectRef, body: unknown): Promise<Workload>;
  /** application/strategic-merge-patch+json: containers merge by name. */
  strategicPatch(ref: ObjectRef, body: unknown): Promise<Workload>;
  /** application/json-patch+json: a failed `test` is 422 Invalid. */
  jsonPatch(ref: ObjectRef, ops: unknown[]): Promise<Workload>;
  watch(ref: ObjectRef, opts: WatchOptions): AsyncIterable<WatchEvent>;
  list(ref: ObjectRef): Promise<{ resourceVersion: string; items: Workload[] }>;
  createEvent(namespace: string, event: unknown): Promise<void>;
  /** image-refresh's own store. */
  configMaps: ConfigMapApi;
  /** The targets' pods, listed and watched by label selector (verification, regressions). */
  pods: PodApi;
}

export type KubeClientOptions = Pick<
  HttpOptions,
  "requestTimeoutMs" | "signal" | "telemetry" | "log" | "fetch" | "readFile" | "sleep" | "collect"
> & { fieldManager?: string };

export function createKubeClient(conn: Connection, opts: KubeClientOptions): KubeClient {
  const http = createKubeHttp(conn, opts);
  const fieldManager = opts.fieldManager ?? "image-refresh";
  const patch = (contentType: string) => (ref: ObjectRef, body: unknown) =>
    readWorkload(http, ref, {
      method: "PATCH",
      path: objectPath(ref),
      query: { fieldManager },
      body,
      contentType,
      target: describeWorkload(ref),
    });
  return {
    get: (ref) =>
      readWorkload(http, ref, { method: "GET", path: objectPath(ref), target: describeWorkload(ref) }),
    prefetch: (ref) => http.prefetch({ method: "GET", path: objectPath(ref), target: describeWorkload(ref) }),
    getDated: async (ref) => {
      let date: string | null = null;
      const onHeaders = (h: Headers) => {
        date = h.get("date");
      };
      const req: KubeRequest = {
        method: "GET",
        path: objectPath(ref),
        target: describeWorkload(ref),
        onHeaders,
      };
      return { workload: await readWorkload(http, ref, req), date };
    },
    mergePatch: patch("application/merge-patch+json"),
    strategicPatch: patch("application/strategic-merge-patch+json"),
    jsonPatch: patch("application/json-patch+json"),
    list: (ref) => list(http, ref),
    configMaps: configMapApi(http, fieldManager),
    pods: podApi(http),
    watch: (ref, w) => watch(http, ref, w),
    createEvent: async (namespace, event) => {
      await http.json({
        method: "POST",
        path: `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        query: { fieldManager },
        body: event,
        target: `event in namespace ${namespace}`,
      });
    },
  };
}

async function readWorkload(http: KubeHttp, ref: ObjectRef, req: KubeRequest): Promise<Workload> {
  const body = await http.json(req);
  return parseOrThrow(ref, req, body);
}

function parseOrThrow(ref: ObjectRef, req: KubeRequest, raw: unknown): Workload {
  try {
    return parseWorkload(ref.kind, raw);
  } catch (e) {
    if (!(e instanceof WorkloadParseError)) throw e;
    throw malformed(req, e.message, e);
  }
}

function malformed(req: KubeRequest, message: string, cause?: unknown): ApiError {
  return new ApiError({
    method: req.method,
    url: req.path,
    target: req.target,
    code: 0,
    reason: "MalformedResponse",
    statusMessage: message,
    cause,
  });
}

const selector = (ref: ObjectRef) => ({ fieldSelector: `metadata.name=${ref.name}` });

async function list(http: KubeHttp, ref: ObjectRef): Promise<{ resourceVersion: string; items: Workload[] }> {
  const req: KubeRequest = {
    method: "GET",
    path: collectionPath(ref),
    query: selector(ref),
    // The HTTP method is GET either way; the API's verb (and an RBAC denial) is list or watch.
    target: `${describeWorkload(ref)} (list)`,
  };
  const body = (await http.json(req)) as { metadata?: { resourceVersion?: unknown }; items?: unknown };
  const rv = body?.metadata?.resourceVersion;
  if (typeof rv !== "string" || !Array.isArray(body.items))
    throw malformed(req, "list without metadata.resourceVersion or items");
  return { resourceVersion: rv, items: body.items.map((item) => parseOrThrow(ref, req, item)) };
}

async function* watch(http: KubeHttp, ref: ObjectRef, w: WatchOptions): AsyncGenerator<WatchEvent> {
  const req: KubeRequest = {
    method: "GET",
    path: collectionPath(ref),
    query: {
      ...selector(ref),
      watch: "1",
      resourceVersion: w.resourceVersion,
      timeoutSeconds: String(Math.max(1, Math.ceil(w.timeoutSeconds))),
      allowWatchBookmarks: "true",
    },
    target: `${describeWorkload(ref)} (watch)`,
  };
  const body = await http.stream(req, w.signal);
  try {
    yield* watchEvents(body);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (w.signal.aborted) throw e;
    // A broken stream is a network failure (transient); garbage in it is not.
    const framing = (e as Error).name === "WatchFramingError";
    throw new ApiError({
      method: "GET",
      url: req.path,
      target: req.target,
      code: 0,
      reason: framing ? "MalformedResponse" : "NetworkError",
      statusMessage: `watch stream: ${(e as Error).message}`,
      cause: e,
    });
  }
}
