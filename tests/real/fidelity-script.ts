// One scripted request sequence for the fidelity report, run the same way against the
// simulated API server (sim/apiserver) and the real kube-apiserver: reads, the four PATCH
// types (a JSON patch's `test` passing and failing), resourceVersion preconditions, Events
// with and without their required fields, a watch from a good and from a bad resourceVersion.
// Each step is observed as its status, the Status `reason`, the managedFields entries after
// it (manager/operation[/subresource], timestamps left out) and, for watches, the event types.
import { buildEvent } from "../../lib/kube/events.ts";
import type { Api } from "./api.ts";

export const NS = "fid";
const WEB = `/apis/apps/v1/namespaces/${NS}/deployments/web`;
const EVENTS = `/apis/events.k8s.io/v1/namespaces/${NS}/events`;
const MERGE = "application/merge-patch+json";

export interface Observation {
  step: string;
  status: number;
  reason: string;
  managers?: string;
  /** Which entry owns which annotation, for the entries that own any. */
  annotations?: string;
  watch?: string;
}

export interface Side {
  api: Api;
  /** Makes every resourceVersion up to now too old for a watch (the sim's compact, etcd's compaction). */
  compact(): Promise<void>;
}

type Body = {
  kind?: string;
  reason?: string;
  metadata?: { managedFields?: ManagedEntry[]; resourceVersion?: string };
};
interface ManagedEntry {
  manager: string;
  operation: string;
  subresource?: string;
  fieldsV1?: { "f:metadata"?: { "f:annotations"?: Record<string, unknown> } };
}

const who = (e: ManagedEntry) => [e.manager, e.operation, e.subresource].filter(Boolean).join("/");

function annotationOwners(b: Body): string | undefined {
  const m = b?.metadata?.managedFields;
  if (!m) return undefined;
  return m
    .map(
      (e) =>
        [
          who(e),
          Object.keys(e.fieldsV1?.["f:metadata"]?.["f:annotations"] ?? {}).filter((k) => k !== "."),
        ] as const,
    )
    .filter(([, keys]) => keys.length > 0)
    .map(
      ([w, keys]) =>
        `${w}: ${keys
          .map((k) => k.slice(2))
          .sort()
          .join(" ")}`,
    )
    .sort()
    .join("; ");
}

function managers(b: Body): string | undefined {
  const m = b?.metadata?.managedFields;
  if (!m) return undefined;
  return m.map(who).sort().join(", ");
}

function observe(step: string, r: { status: number; body: unknown }, withManagers = false): Observation {
  const b = (typeof r.body === "object" && r.body !== null ? r.body : {}) as Body;
  const o: Observation = { step, status: r.status, reason: b.kind === "Status" ? (b.reason ?? "") : "" };
  if (!withManagers) return o;
  const m = managers(b);
  const a = annotationOwners(b);
  return { ...o, ...(m === undefined ? {} : { managers: m }), ...(a ? { annotations: a } : {}) };
}

/** The types of the events a watch sends within `ms` (BOOKMARKs left out), or its error status. */
export async function watchTypes(
  api: Api,
  query: string,
  ms = 2500,
): Promise<{ status: number; types: string }> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  const res = await fetch(`${api.server}/apis/apps/v1/namespaces/${NS}/deployments?${query}`, {
    headers: { authorization: `Bearer ${api.token}`, accept: "application/json" },
    tls: { ca: api.caPem },
    signal: ctl.signal,
  });
  let text = "";
  try {
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
  } catch {}
  clearTimeout(timer);
  if (res.status !== 200) {
    const b = JSON.parse(text || "{}");
    return { status: res.status, types: `(${b.reason ?? ""}) ${String(b.message ?? text).slice(0, 100)}` };
  }
  const types = text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { type: string; object?: { code?: number; reason?: string } })
    .filter((e) => e.type !== "BOOKMARK")
    .map((e) => (e.type === "ERROR" ? `ERROR ${e.object?.code} ${e.object?.reason}` : e.type));
  return { status: 200, types: types.join(" ") };
}

const image = (ops: unknown[]) => ({ body: ops, contentType: "application/json-patch+json" });

/** Waits until the Deployment's resourceVersion holds for a second: its controller is done with it. */
async function quiet(api: Api): Promise<string> {
  const seen: string[] = [];
  for (let i = 0; i < 40; i++) {
    seen.push((await api.get(WEB)).metadata.resourceVersion as string);
    const [a, b, c] = seen.slice(-3);
    if (seen.length >= 3 && a === b && b === c) return c as string;
    await Bun.sleep(1000);
  }
  throw new Error("the Deployment never went quiet");
}

export async function runScript(side: Side): Promise<Observation[]> {
  const { api } = side;
  const out: Observation[] = [];
  const patch = (q: string, body: unknown, contentType: string) =>
    api.request("PATCH", `${WEB}?fieldManager=${q}`, { body, contentType });
  const first = await api.request("GET", WEB);
  out.push(observe("GET the Deployment", first, true));
  out.push(observe("GET a missing Deployment", await api.request("GET", `${WEB}-missing`)));
  out.push(
    observe(
      "merge PATCH of annotations (image-refresh)",
      await patch("image-refresh", { metadata: { annotations: { "image-refresh.io/x": "1" } } }, MERGE),
      true,
    ),
  );
  const smp = {
    spec: { template: { spec: { containers: [{ name: "web", image: "example.test/web:2" }] } } },
  };
  out.push(
    observe(
      "strategic PATCH of the image (kubectl-set)",
      await patch("kubectl-set", smp, "application/strategic-merge-patch+json"),
      true,
    ),
  );
  const path = "/spec/template/spec/containers/0";
  const ok = [
    { op: "test", path: `${path}/name`, value: "web" },
    { op: "replace", path: `${path}/image`, value: "example.test/web:3" },
  ];
  out.push(
    observe(
      "JSON PATCH, test passing (image-refresh)",
      await api.request("PATCH", `${WEB}?fieldManager=image-refresh`, image(ok)),
      true,
    ),
  );
  const bad = [
    { op: "test", path: `${path}/name`, value: "renamed" },
    { op: "replace", path: `${path}/image`, value: "example.test/web:4" },
  ];
  out.push(
    observe(
      "JSON PATCH, test failing",
      await api.request("PATCH", `${WEB}?fieldManager=image-refresh`, image(bad)),
    ),
  );
  const applied = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: NS, labels: { tool: "helm" } },
  };
  out.push(
    observe(
      "apply PATCH of a label (helm)",
      await patch("helm", applied, "application/apply-patch+yaml"),
      true,
    ),
  );
  // The controller may still write status between our read and our write (a real 409 that is
  // a race, not a difference): wait for quiet, retry a few times. The stale one then always is.
  let rv = "";
  let current: { status: number; body: unknown } = { status: 0, body: {} };
  for (let i = 0; i < 5 && current.status !== 200; i++) {
    rv = await quiet(api);
    const body = { metadata: { resourceVersion: rv, annotations: { "image-refresh.io/x": "2" } } };
    current = await patch("image-refresh", body, MERGE);
  }
  out.push(observe("merge PATCH, current resourceVersion", current));
  out.push(
    observe(
      "merge PATCH, stale resourceVersion",
      await patch(
        "image-refresh",
        { metadata: { resourceVersion: rv, annotations: { "image-refresh.io/x": "3" } } },
        MERGE,
      ),
    ),
  );
  out.push(observe("PATCH with an unknown content type", await patch("image-refresh", {}, "text/plain")));
  out.push(...(await events(api, first.body)));
  out.push(...(await watches(side)));
  out.push(
    observe(
      "GET the store's ConfigMap (absent)",
      await api.request("GET", `/api/v1/namespaces/${NS}/configmaps/image-refresh`),
    ),
  );
  return out;
}

async function events(
  api: Api,
  web: { kind?: string; metadata: Record<string, unknown> },
): Promise<Observation[]> {
  const body = buildEvent({
    regarding: { kind: "Deployment", metadata: web.metadata as never },
    type: "Normal",
    reason: "Refreshed",
    action: "Refresh",
    note: "n",
    reportingInstance: "fidelity",
  });
  const without = (field: string) => {
    const b: Record<string, unknown> = {
      ...body,
      metadata: { ...body.metadata, name: `${body.metadata.name}${field.length}` },
    };
    delete b[field];
    return b;
  };
  const post = (b: unknown) => api.request("POST", EVENTS, { body: b });
  return [
    observe("POST an Event (events.k8s.io/v1)", await post(body)),
    observe("POST the same Event again", await post(body)),
    observe("POST an Event without reportingController", await post(without("reportingController"))),
    observe("POST an Event without eventTime", await post(without("eventTime"))),
    observe("POST an Event without action", await post(without("action"))),
    observe(
      "POST an Event with a note over 1024 bytes",
      await post({ ...body, metadata: { name: `${body.metadata.name}-long` }, note: "x".repeat(1025) }),
    ),
  ];
}

async function watches(side: Side): Promise<Observation[]> {
  const { api } = side;
  const sel = "fieldSelector=metadata.name%3Dweb&watch=1";
  const rv = await quiet(api);
  const changed = setTimeout(() => {
    void api.request("PATCH", `${WEB}?fieldManager=kubectl-annotate`, {
      body: { metadata: { annotations: { w: "1" } } },
      contentType: MERGE,
    });
  }, 500);
  const live = await watchTypes(api, `${sel}&resourceVersion=${rv}&allowWatchBookmarks=true`);
  clearTimeout(changed);
  const garbage = await watchTypes(api, `${sel}&resourceVersion=abc`);
  await side.compact();
  const expired = await watchTypes(api, `${sel}&resourceVersion=1`);
  return [
    {
      step: "watch from the current resourceVersion, one change",
      status: live.status,
      reason: "",
      watch: live.types,
    },
    { step: "watch from resourceVersion abc", status: garbage.status, reason: "", watch: garbage.types },
    {
      step: "watch from a compacted resourceVersion",
      status: expired.status,
      reason: "",
      watch: expired.types,
    },
  ];
}
