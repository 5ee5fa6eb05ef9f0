// core/v1 Pods through the one HTTP layer: a LIST and a WATCH by label selector in one namespace,
// each pod parsed once at the boundary into what the verification and the regression rules read
// (readiness, each container's restarts and why it waits). Only list/watch: RBAC grants nothing
// else on pods.
import type * as z from "zod/mini";
import { checkPod } from "../checks/checks.generated.ts";
import { formatPath, lazy, parseChecked } from "../issues.ts";
import { ApiError } from "./errors.ts";
import type { KubeHttp, KubeRequest } from "./http.ts";
import { type WatchEvent, watchEvents } from "./watch.ts";

export interface ContainerState {
  name: string;
  image: string;
  ready: boolean;
  restartCount: number;
  /** state.waiting.reason: CrashLoopBackOff, ImagePullBackOff, ErrImagePull, ContainerCreating... */
  waiting?: string;
  /** lastState.terminated.reason, e.g. Error, OOMKilled: what the last restart was. */
  lastTerminated?: string;
  lastExitCode?: number;
  /** lastState.terminated.finishedAt (RFC 3339): when the last restart began. */
  lastFinishedAt?: string;
}

export interface Pod {
  name: string;
  uid: string;
  labels: Record<string, string>;
  deleting: boolean;
  phase: string;
  /** The Ready condition: true, false, or undefined when the kubelet has not written it. */
  ready?: boolean;
  /** The Ready condition's reason when it is false (ContainersNotReady, or a node's NodeNotReady). */
  readyReason?: string;
  images: Record<string, string>;
  containers: ContainerState[];
}

/** A pod as the rules read it (compiled into lib/checks/checks.generated.ts). */
export const podSchema = lazy((z) => {
  const text = z.string();
  const opt = z.optional(text);
  const Container = z.object({ name: text, image: text });
  const Status = z.object({
    name: text,
    image: z._default(text, ""),
    ready: z._default(z.boolean(), false),
    restartCount: z._default(z.int(), 0),
    state: z.optional(z.object({ waiting: z.optional(z.object({ reason: opt })) })),
    lastState: z.optional(
      z.object({
        terminated: z.optional(
          z.object({ reason: opt, exitCode: z.optional(z.int()), finishedAt: z.nullish(text) }),
        ),
      }),
    ),
  });
  return z.object({
    metadata: z.object({
      name: text,
      uid: z._default(text, ""),
      labels: z.nullish(z.record(z.string(), text)),
      deletionTimestamp: z.nullish(text),
    }),
    spec: z.object({ containers: z.array(Container) }),
    status: z._default(
      z.object({
        phase: z._default(text, "Pending"),
        conditions: z.nullish(z.array(z.object({ type: text, status: text, reason: opt }))),
        containerStatuses: z.nullish(z.array(Status)),
      }),
      { phase: "Pending" },
    ),
  });
});
type RawPod = z.output<ReturnType<typeof podSchema>>;

function toPod(p: RawPod): Pod {
  const ready = p.status.conditions?.find((c) => c.type === "Ready");
  return {
    name: p.metadata.name,
    uid: p.metadata.uid,
    labels: p.metadata.labels ?? {},
    deleting: !!p.metadata.deletionTimestamp,
    phase: p.status.phase,
    ...(ready ? { ready: ready.status === "True" } : {}),
    ...(ready?.reason ? { readyReason: ready.reason } : {}),
    images: Object.fromEntries(p.spec.containers.map((c) => [c.name, c.image])),
    containers: (p.status.containerStatuses ?? []).map((c) => ({
      name: c.name,
      image: c.image,
      ready: c.ready,
      restartCount: c.restartCount,
      ...(c.state?.waiting?.reason ? { waiting: c.state.waiting.reason } : {}),
      ...(c.lastState?.terminated?.reason ? { lastTerminated: c.lastState.terminated.reason } : {}),
      ...(c.lastState?.terminated?.exitCode !== undefined
        ? { lastExitCode: c.lastState.terminated.exitCode }
        : {}),
      ...(c.lastState?.terminated?.finishedAt ? { lastFinishedAt: c.lastState.terminated.finishedAt } : {}),
    })),
  };
}

export function parsePod(req: Pick<KubeRequest, "method" | "path" | "target">, raw: unknown): Pod {
  // The compiled check in the hot path (every pod of every list and watch event of a rollout);
  // zod runs only for a pod it refuses, to say why.
  const r = parseChecked(checkPod, podSchema, raw);
  if (r.ok) return toPod(r.value);
  const fields = r.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("; ");
  throw malformed(req, `unexpected Pod (${fields})`);
}

function malformed(req: Pick<KubeRequest, "method" | "path" | "target">, message: string, cause?: unknown) {
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

export interface PodApi {
  list(namespace: string, labelSelector: string): Promise<{ resourceVersion: string; items: Pod[] }>;
  watch(
    namespace: string,
    opts: { labelSelector: string; resourceVersion: string; timeoutSeconds: number; signal: AbortSignal },
  ): AsyncIterable<WatchEvent>;
}

const collection = (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`;

export function podApi(http: KubeHttp): PodApi {
  return {
    async list(namespace, labelSelector) {
      const req: KubeRequest = {
        method: "GET",
        path: collection(namespace),
        query: { labelSelector },
        target: `pods ${labelSelector} in namespace ${namespace} (list)`,
      };
      const body = (await http.json(req)) as { metadata?: { resourceVersion?: unknown }; items?: unknown };
      const rv = body?.metadata?.resourceVersion;
      if (typeof rv !== "string" || !Array.isArray(body.items))
        throw malformed(req, "list without metadata.resourceVersion or items");
      return { resourceVersion: rv, items: body.items.map((item) => parsePod(req, item)) };
    },
    watch: (namespace, w) => watchPods(http, namespace, w),
  };
}

async function* watchPods(
  http: KubeHttp,
  namespace: string,
  w: { labelSelector: string; resourceVersion: string; timeoutSeconds: number; signal: AbortSignal },
): AsyncGenerator<WatchEvent> {
  const req: KubeRequest = {
    method: "GET",
    path: collection(namespace),
    query: {
      labelSelector: w.labelSelector,
      watch: "1",
      resourceVersion: w.resourceVersion,
      timeoutSeconds: String(Math.max(1, Math.ceil(w.timeoutSeconds))),
      allowWatchBookmarks: "true",
    },
    target: `pods ${w.labelSelector} in namespace ${namespace} (watch)`,
  };
  // `w.signal` ends the stream, not the wait for its headers (bounded by the request timeout and
  // the tick's own signal): a rollout that settles while this watch is being opened must not leave
  // a request without an answer behind it.
  const live = new AbortController();
  const body = await http.stream(req, live.signal);
  const stop = () => live.abort(w.signal.reason);
  if (w.signal.aborted) stop();
  w.signal.addEventListener("abort", stop, { once: true });
  try {
    yield* watchEvents(body);
  } catch (e) {
    if (e instanceof ApiError || w.signal.aborted) throw e;
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
  } finally {
    w.signal.removeEventListener("abort", stop);
  }
}

/** A workload's spec.selector as a labelSelector query (apimachinery's string form). */
export function selectorText(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] | null }>;
}): string {
  const terms = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(",")})`;
    if (e.operator === "In") terms.push(`${e.key} in ${values}`);
    else if (e.operator === "NotIn") terms.push(`${e.key} notin ${values}`);
    else if (e.operator === "Exists") terms.push(e.key);
    else if (e.operator === "DoesNotExist") terms.push(`!${e.key}`);
  }
  return terms.join(",");
}
