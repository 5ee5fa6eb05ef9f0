// Scenes for the reliability tests: a fresh world put into one of the situations a tick can
// meet, set up directly in the simulators so no earlier tick (and no earlier write) is needed.

import { settled } from "../../sim/apiserver/testing.ts";
import type { Fault } from "../../sim/faults.ts";
import type { RunResult } from "../binary.ts";
import { PREFIX, STATE_PATH, startWorld, type World } from "../world.ts";

export const k = (name: string) => `${PREFIX}/${name}`;
export const OLD = `sha256:${"0".repeat(64)}`;
export const PROXY_PATH = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";
export const AGENT_PATH = "/apis/apps/v1/namespaces/agents/daemonsets/node-agent";
export const EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/apps/events";
export { STATE_PATH };

type Kind = "Deployment" | "DaemonSet";
/** The default world's targets per image key: what a recorded digest vouches for. */
export const TARGETS: Record<string, Array<{ kind: Kind; ns: string; name: string; container: string }>> = {
  api: [
    { kind: "Deployment", ns: "apps", name: "api", container: "api" },
    { kind: "Deployment", ns: "apps", name: "api-proxy", container: "proxy" },
  ],
  "node-agent": [{ kind: "DaemonSet", ns: "agents", name: "node-agent", container: "agent" }],
};
const REPO: Record<string, string> = { api: "myorg/api", "node-agent": "myorg/node-agent" };
const PATH_OF: Record<string, string> = {
  api: STATE_PATH,
  "api-proxy": PROXY_PATH,
  "node-agent": AGENT_PATH,
};

/** changed: both images have a new digest; streak: that plus a recorded skip streak of 2. */
export type Scenario = "unchanged" | "unsettled" | "changed" | "streak" | "lockout" | "first";

export const BASELINE: Record<Scenario, string> = {
  unchanged: "noop",
  unsettled: "skipped",
  changed: "refreshed",
  streak: "refreshed",
  lockout: "locked_out",
  first: "recorded",
};

export interface Scene {
  w: World;
  scenario: Scenario;
  /** The digests the registry serves now, by image key. */
  digests: Record<string, string>;
  /** Our annotations before the tick. */
  before: Record<string, string>;
}

export async function makeScene(
  scenario: Scenario,
  tweak?: (c: Record<string, unknown>) => void,
): Promise<Scene> {
  const w = await startWorld();
  if (tweak) w.writeConfig(tweak);
  const digests = {
    api: w.registry.push("myorg/api", "stable"),
    "node-agent": w.registry.push("myorg/node-agent", "stable", { multiArch: true }),
  };
  const a: Record<string, string> = {};
  if (scenario !== "first") {
    const stale = scenario !== "unchanged" && scenario !== "unsettled";
    for (const key of Object.keys(digests))
      a[k(`last-refreshed-${key}-digest`)] = stale
        ? OLD
        : ((digests as Record<string, string>)[key] as string);
  }
  if (scenario === "streak") a[k("refresh-skip-streak")] = "2";
  if (scenario === "lockout") a[k("refresh-attempt")] = "3";
  w.api.setAnnotations("Deployment", "apps", "api", a);
  if (scenario === "unsettled") w.api.setMode("Deployment", "apps", "api", "unsettled");
  return { w, scenario, digests, before: w.ours() };
}

/** Adds a rule to the right server; `skip` earlier matching requests pass untouched. */
export function inject(
  w: World,
  t: { server: "api" | "registry"; method: string; path: string | RegExp; skip?: number; times?: number },
  fault: Fault,
): void {
  const faults = t.server === "api" ? w.api.faults : w.registry.faults;
  if (t.skip) faults.add({ method: t.method, path: t.path, times: t.skip, fault: { type: "delay", ms: 0 } });
  faults.add({ method: t.method, path: t.path, times: t.times, fault });
}

const OUTCOME_LINE =
  /^\[image-refresh\] (?:ERROR: |WARNING: )?(noop|recorded|refreshed|skipped|frozen|locked_out|held|failed|error): /m;

/** The outcome from the tick's closing log line, `<outcome>: ...`. */
export function outcomeOf(r: RunResult): string {
  return OUTCOME_LINE.exec(r.stderr)?.[1] ?? "none";
}

const isJsonPatch = (e: { contentType?: string }) => e.contentType?.startsWith("application/json-patch+json");
const ops = (e: { body?: string }): Array<{ op: string; path: string }> => JSON.parse(e.body ?? "[]");
const annotationsOf = (e: { body?: string }): Record<string, string | null> =>
  JSON.parse(e.body ?? "{}").metadata?.annotations ?? {};
// A faulted answer (malformed, reset) was never applied by the simulator, whatever its status.
const ok = (e: { status: number; fault?: string }) =>
  e.status >= 200 && e.status < 300 && (e.fault === undefined || e.fault === "delay");

/** Every request that tried to re-image a workload, whatever its answer. */
export function imagePatches(w: World) {
  return w.api.log.filter(
    (e) => e.method === "PATCH" && isJsonPatch(e) && ops(e).some((o) => o.path.endsWith("/image")),
  );
}

/** Names of the workloads whose re-image request succeeded, in order. */
export function patched(w: World): string[] {
  return imagePatches(w)
    .filter(ok)
    .map((e) => e.path.split("/").pop() as string);
}

function classify(e: World["api"]["log"][number]): string {
  if (e.method !== "PATCH" || e.path !== STATE_PATH) return "other";
  if (isJsonPatch(e)) {
    if (ops(e).some((o) => o.op === "remove" && o.path.includes("refresh-attempt"))) return "reset";
    return "image";
  }
  const a = annotationsOf(e);
  if (a[k("refresh-attempt")] === null) return "reset";
  if (typeof a[k("refresh-attempt")] === "string") return "attempt";
  if (k("refresh-skip-streak") in a) return a[k("refresh-skip-streak")] === null ? "clear" : "streak";
  if (Object.keys(a).some((x) => x.includes("last-refreshed-"))) return "record";
  return "other";
}

/**
 * Settled, as judged after the tick exited. The state object's generation also moves with the
 * tick's own annotation writes (the digest record itself), and the simulated controller may not
 * have observed that yet when the checker runs on a loaded machine; the image rollout it waited
 * for was observed before the record, so only for the state object the unobserved generation of
 * those last annotation writes is not held against it.
 */
function settledAfterOwnWrites(obj: any, name: string): boolean {
  if (settled(obj) || `${PATH_OF[name]}` !== STATE_PATH) return settled(obj);
  return settled({ ...obj, status: { ...obj.status, observedGeneration: obj.metadata.generation } });
}

export interface Verdict {
  /** Invariant number → what was violated; empty when all held. */
  violations: string[];
}

/**
 * SPEC's reliability invariants, read from the API server's request log and final state:
 * (1) no workload patch before the incremented count is persisted, (3) a changed digest recorded
 * only after every target settled on it, (4) the reset precedes, and never waits on, the digest
 * write, (6) a failed streak clear does not change the tick's course, (7) a no-op writes nothing,
 * (8) the process ends within its deadline.
 */
export function invariants(s: Scene, outcome: string, elapsedMs: number, budgetMs: number): string[] {
  const { w } = s;
  const log = w.api.log;
  const kinds = log.map(classify);
  const bad: string[] = [];
  const count = Number(s.before[k("refresh-attempt")] ?? "0");
  const attemptAt = log.findIndex(
    (e, i) => kinds[i] === "attempt" && ok(e) && annotationsOf(e)[k("refresh-attempt")] === String(count + 1),
  );
  const images = imagePatches(w).map((e) => log.indexOf(e));
  if (images.some((i) => attemptAt < 0 || i < attemptAt)) bad.push("1: workload patched before the count");
  if (images.length && !["refreshed", "failed"].includes(outcome))
    bad.push(`1: workload patched on ${outcome}`);
  const resets = log.flatMap((_e, i) => (kinds[i] === "reset" ? [i] : []));
  for (const [i, e] of log.entries()) {
    if (kinds[i] !== "record" || !ok(e)) continue;
    for (const [key, digest] of Object.entries(annotationsOf(e))) {
      const imageKey = /last-refreshed-(.+)-digest$/.exec(key)?.[1];
      if (!imageKey || s.before[key] === undefined) continue; // first observation needs no rollout
      for (const t of TARGETS[imageKey] ?? []) {
        const at = log.findIndex((x) => x.path === PATH_OF[t.name] && isJsonPatch(x) && ok(x));
        const obj = w.api.getObject(t.kind, t.ns, t.name);
        const img = obj.spec.template.spec.containers.find(
          (c: { name: string }) => c.name === t.container,
        )?.image;
        if (
          at < 0 ||
          at > i ||
          !settledAfterOwnWrites(obj, t.name) ||
          img !== `${w.registry.host}/${REPO[imageKey]}@${digest}`
        )
          bad.push(`3: ${imageKey} recorded before ${t.name} settled on it`);
      }
      if (!resets.some((r) => r < i && ok(log[r] as { status: number })))
        bad.push("4: digest recorded without a reset before it");
    }
    if (resets.some((r) => r > i)) bad.push("4: reset sent after the digest record");
  }
  const clearFailed = log.some((e, i) => kinds[i] === "clear" && !ok(e));
  if (clearFailed && outcome !== BASELINE[s.scenario]) bad.push(`6: failed streak clear ended in ${outcome}`);
  if (outcome === "noop" && log.some((e) => e.method !== "GET")) bad.push("7: a no-op tick wrote");
  if (elapsedMs > budgetMs) bad.push(`8: took ${elapsedMs} ms, deadline ${budgetMs} ms`);
  return bad;
}

/** The tick's own deadline for the default world (SPEC: three workloads, 12 requests). */
export function budgetMs(rolloutMs: number, requestMs = 1000): number {
  return 3 * rolloutMs + 12 * requestMs;
}

/** A counting semaphore: the matrix runs a few cells at once on a 2-core machine, not all. */
export function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  return async (fn) => {
    while (active >= n) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
