// Scenes for the reliability tests: a fresh world put into one of the situations a tick can
// meet, set up directly in the simulators so no earlier tick (and no earlier write) is needed.

import { settled } from "../../sim/apiserver/driver.ts";
import type { Fault } from "../../sim/faults.ts";
import type { RunResult } from "../support/binary.ts";
import { DOCUMENTED_SEVERITY, documentedExitCode } from "../support/documented-outcomes.ts";
import {
  floatTargets,
  PREFIX,
  pinTargets,
  SCENARIO_TARGETS,
  STATE_PATH,
  STORE_PATH,
  startWorld,
  type World,
} from "../support/world.ts";

export const k = (name: string) => `${PREFIX}/${name}`;
export const OLD = `sha256:${"0".repeat(64)}`;
export const PROXY_PATH = "/apis/apps/v1/namespaces/apps/deployments/api-proxy";
export const AGENT_PATH = "/apis/apps/v1/namespaces/agents/daemonsets/node-agent";
export const EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/apps/events";
export const STORE_CREATE_PATH = "/api/v1/namespaces/image-refresh/configmaps";
/** The api Deployment: once the legacy state object, now one target like the others. */
export const API_PATH = STATE_PATH;
export { STORE_PATH };

/** The default world's targets per image key: what a recorded digest vouches for. */
export const TARGETS = Object.fromEntries(
  Object.entries(SCENARIO_TARGETS).map(([key, img]) => [key, img.targets]),
);
const REPO = Object.fromEntries(Object.entries(SCENARIO_TARGETS).map(([key, img]) => [key, img.repository]));
const PATH_OF: Record<string, string> = {
  api: API_PATH,
  "api-proxy": PROXY_PATH,
  "node-agent": AGENT_PATH,
};

/**
 * changed: both images have a new digest; streak: that plus each image's recorded skip streak of
 * 2; settling: nothing due, each image's skip streak at 2 and its targets settled now; lockout: each image's attempt count at 3; first: a fresh installation, no store yet (the
 * first write creates it); unresolved: api's tag answers 404 (a typo'd repository) while
 * node-agent is in sync; stale: that with api's streak one short of the ceiling.
 */
export type Scenario =
  | "unchanged"
  | "unsettled"
  | "changed"
  | "streak"
  | "settling"
  | "lockout"
  | "first"
  | "unresolved"
  | "stale";

export const BASELINE: Record<Scenario, string> = {
  unchanged: "noop",
  unsettled: "skipped",
  changed: "refreshed",
  streak: "refreshed",
  settling: "noop",
  lockout: "locked_out",
  first: "recorded",
  unresolved: "unresolved",
  stale: "stale",
};

/** The default world's maxUnresolvedTicks (the default: the scenario config does not set it). */
export const MAX_UNRESOLVED = 8;

export interface Scene {
  w: World;
  scenario: Scenario;
  /** The digests the registry serves now, by image key. */
  digests: Record<string, string>;
  /** The store's data before the tick, named `<prefix>/<key>`. */
  before: Record<string, string>;
}

export async function makeScene(
  scenario: Scenario,
  tweak?: (c: Record<string, unknown>) => void,
): Promise<Scene> {
  const w = await startWorld();
  if (tweak) w.writeConfig(tweak);
  const digests: Record<string, string> = {
    api: w.registry.push("myorg/api", "stable"),
    "node-agent": w.registry.push("myorg/node-agent", "stable", { multiArch: true }),
  };
  const a: Record<string, string> = {};
  if (scenario !== "first") {
    const stale = ["changed", "streak", "lockout"].includes(scenario);
    const recorded = Object.fromEntries(
      Object.keys(digests).map((key) => [key, stale ? OLD : (digests[key] as string)]),
    );
    for (const [key, digest] of Object.entries(recorded)) a[k(`last-refreshed-${key}-digest`)] = digest;
    // The containers run what the record says, pinned by image-refresh's earlier refresh.
    await pinTargets(w, recorded);
  } else {
    // Never observed: the containers name the floating tag, as a fresh installation's do.
    await floatTargets(w, Object.keys(digests));
  }
  for (const key of Object.keys(digests)) {
    if (scenario === "streak" || scenario === "settling") a[k(`skip-streak-${key}`)] = "2";
    if (scenario === "lockout") a[k(`refresh-attempt-${key}`)] = "3";
  }
  if (scenario === "unresolved" || scenario === "stale") {
    const notFound = { type: "status", code: 404, reason: "MANIFEST_UNKNOWN" } as const;
    w.registry.faults.add({ method: "HEAD", path: "/v2/myorg/api/manifests/stable", fault: notFound });
  }
  if (scenario === "stale") a[k("unresolved-streak-api")] = String(MAX_UNRESOLVED - 1);
  // A fresh installation has no store: its first write creates it.
  if (scenario !== "first") w.setBook(a);
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

/** The documented outcomes, most severe first, and their exit codes (support/documented-outcomes.ts). */
export const SEVERITY = DOCUMENTED_SEVERITY;
/** The exit code of an outcome, as the documented table gives it. */
export const exitCodeFor = (o: string): 0 | 1 => documentedExitCode(o);

const OUTCOME_LINE = new RegExp(
  `^\\[image-refresh\\] (?:ERROR: |WARNING: )?(${SEVERITY.join("|")}): (.*?)(?: outcome=|$)`,
  "gm",
);

/** The tick's closing log line, `<outcome>: <per-image verdicts>`; the last one wins. */
function closingLine(r: RunResult): { outcome: string; rest: string } | undefined {
  const all = [...r.stderr.matchAll(OUTCOME_LINE)];
  const last = all.at(-1);
  return last ? { outcome: last[1] as string, rest: last[2] as string } : undefined;
}

/** The outcome from the tick's closing log line, `<outcome>: ...`. */
export function outcomeOf(r: RunResult): string {
  return closingLine(r)?.outcome ?? "none";
}

/**
 * Each image's verdict from the closing line (`api: refreshed; node-agent: locked_out 3/3`). A
 * tick stopped by a failed write puts its reason first; the verdict list follows it, so the last
 * mention of a key wins.
 */
export function verdictsOf(r: RunResult): Record<string, string> {
  const rest = closingLine(r)?.rest ?? "";
  const out: Record<string, string> = {};
  for (const key of Object.keys(TARGETS)) {
    const re = new RegExp(`(?:^|; )${key}: (${SEVERITY.join("|")})\\b`, "g");
    const found = [...rest.matchAll(re)].at(-1);
    if (found) out[key] = found[1] as string;
  }
  return out;
}

const isJsonPatch = (e: { contentType?: string }) => e.contentType?.startsWith("application/json-patch+json");
const ops = (e: { body?: string }): Array<{ op: string; path: string; value?: unknown }> =>
  JSON.parse(e.body ?? "[]");
/** The store keys a store write sets (null: removes), named `<prefix>/<key>` as s.before is. */
const dataOf = (e: { body?: string }): Record<string, string | null> =>
  Object.fromEntries(
    Object.entries(JSON.parse(e.body ?? "{}").data ?? {}).map(([n, v]) => [k(n), v as never]),
  );
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

/** The image keys a re-image request sets containers for, read from the references it writes. */
function imagesIn(e: { body?: string }): string[] {
  const refs = ops(e).flatMap((o) => (o.path.endsWith("/image") ? [String(o.value)] : []));
  return Object.keys(REPO).filter((key) => refs.some((ref) => ref.includes(`/${REPO[key]}@`)));
}

/** The image's attempt count in the store before the tick, else 0. */
export function countBefore(s: Scene, key: string): number {
  return Number(s.before[k(`refresh-attempt-${key}`)] ?? "0");
}

/** A write to the store: a PATCH of it, or the POST that creates it. */
const isStoreWrite = (e: { method: string; path: string }) =>
  (e.method === "PATCH" && e.path === STORE_PATH) || (e.method === "POST" && e.path === STORE_CREATE_PATH);

/**
 * A store write that only removes skip streaks (of images found settled). A streak removal that
 * rides with an attempt count is that count's write: its failure holds the tick (invariant 1).
 */
function isStreakClear(e: { method: string; path: string; body?: string }): boolean {
  // The registry's first answer to GET /v2/ rides with a write the tick makes anyway.
  const data = Object.entries(dataOf(e)).filter(([n]) => !n.startsWith(k("registry-challenge")));
  return (
    isStoreWrite(e) &&
    data.length > 0 &&
    data.every(([n, v]) => n.startsWith(k("skip-streak-")) && v === null)
  );
}

/** A store write removing this image's attempt count: its reset. */
function resetsImage(e: { method: string; path: string; body?: string }, key: string): boolean {
  return isStoreWrite(e) && dataOf(e)[k(`refresh-attempt-${key}`)] === null;
}

/**
 * The tick's reliability invariants, per image, read from the API server's request log (the
 * bookkeeping from the store writes) and final state: (1) no workload is patched for an image
 * before that image's count + 1 is persisted in the store, and
 * only on a tick that refreshes (or fails) that image; (2) an unresolved image's streak is counted,
 * or the tick fails; (3) a changed digest recorded only after every target of that image settled
 * on it; (4) the image's reset precedes, and never waits on, its digest write; (5) the tick's
 * outcome is its most severe image verdict, so an unresolved image never ends a tick as noop;
 * (6) a failed streak clear does not change the tick's course; (7) a no-op writes nothing but
 * the removal of streaks (and the registry's first answer riding with it);
 * (8) the process ends within its deadline.
 */
export function invariants(s: Scene, r: RunResult, elapsedMs: number, budgetMs: number): string[] {
  const outcome = outcomeOf(r);
  const verdicts = verdictsOf(r);
  const bad = [...countedBeforePatch(s, outcome, verdicts), ...streaksCounted(s, outcome, verdicts)];
  bad.push(...recordedAfterSettle(s));
  const clearFailed = s.w.api.log.some((e) => isStreakClear(e) && !ok(e));
  if (clearFailed && outcome !== BASELINE[s.scenario]) bad.push(`6: failed streak clear ended in ${outcome}`);
  for (const [key, v] of Object.entries(verdicts))
    if (SEVERITY.indexOf(v as never) < SEVERITY.indexOf(outcome as never))
      bad.push(`5: ${key} is ${v} but the tick is ${outcome}`);
  if (outcome === "noop" && s.w.api.log.some((e) => e.method !== "GET" && !isStreakClear(e)))
    bad.push("7: a no-op tick wrote");
  if (elapsedMs > budgetMs) bad.push(`8: took ${elapsedMs} ms, deadline ${budgetMs} ms`);
  return bad;
}

/** (1) Each re-image request comes after a persisted count + 1 of every image it carries. */
function countedBeforePatch(s: Scene, outcome: string, verdicts: Record<string, string>): string[] {
  const log = s.w.api.log;
  const bad: string[] = [];
  for (const e of imagePatches(s.w)) {
    const at = log.indexOf(e);
    const name = e.path.split("/").pop();
    for (const key of imagesIn(e)) {
      const want = String(countBefore(s, key) + 1);
      const counted = log.findIndex(
        (x) => isStoreWrite(x) && ok(x) && dataOf(x)[k(`refresh-attempt-${key}`)] === want,
      );
      if (counted < 0 || counted > at) bad.push(`1: ${name} patched for ${key} before its count ${want}`);
      const v = verdicts[key] ?? outcome;
      if (ok(e) && !["refreshed", "failed"].includes(v)) bad.push(`1: ${name} patched for ${key} on ${v}`);
    }
  }
  return bad;
}

/** (2) An image the tick calls unresolved or stale has its streak one higher, unless the tick failed. */
function streaksCounted(s: Scene, outcome: string, verdicts: Record<string, string>): string[] {
  const after = s.w.ours();
  const bad: string[] = [];
  for (const [key, v] of Object.entries(verdicts)) {
    if (v !== "unresolved" && v !== "stale") continue;
    const name = k(`unresolved-streak-${key}`);
    const want = String(Number(s.before[name] ?? "0") + 1);
    if (after[name] !== want && outcome !== "error")
      bad.push(`2: ${key} ${v} with streak ${after[name]} on ${outcome}`);
  }
  return bad;
}

/** (3) and (4): a changed digest is recorded after its targets settled on it and after its reset. */
function recordedAfterSettle(s: Scene): string[] {
  const { w } = s;
  const log = w.api.log;
  const bad: string[] = [];
  for (const [i, e] of log.entries()) {
    if (!isStoreWrite(e) || !ok(e)) continue;
    for (const [name, digest] of Object.entries(dataOf(e))) {
      const key = /last-refreshed-(.+)-digest$/.exec(name)?.[1];
      // A first observation needs no rollout; rewriting the same digest is no change.
      if (!key || digest === null || s.before[name] === undefined || s.before[name] === digest) continue;
      for (const t of TARGETS[key] ?? []) {
        const at = log.findIndex(
          (x) =>
            x.path === PATH_OF[t.name] && ok(x) && imagePatches(w).includes(x) && imagesIn(x).includes(key),
        );
        const obj = w.api.getObject(t.kind, t.ns, t.name);
        const img = obj.spec.template.spec.containers.find(
          (c: { name: string }) => c.name === t.container,
        )?.image;
        if (at < 0 || at > i || !settled(obj) || img !== `${w.registry.host}/${REPO[key]}@${digest}`)
          bad.push(`3: ${key} recorded before ${t.name} settled on it`);
      }
      if (!log.some((x, j) => j < i && ok(x) && resetsImage(x, key)))
        bad.push(`4: ${key} recorded without a reset before it`);
      if (log.some((x, j) => j > i && resetsImage(x, key)))
        bad.push(`4: ${key} reset sent after its digest record`);
    }
  }
  return bad;
}

/** The tick's own deadline for the default world: three rollout waits and 12 requests. */
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
