// The fault matrix as data: every request a tick can make, the scene that reaches it, and what
// the tick must do when that request fails. Reads get the fault on every try (their
// retries must not hide a server that stays broken); writes get it once, since they are never
// retried and a later request on the same path is another step of the story.
import type { Fault } from "../../sim/faults.ts";
import {
  AGENT_PATH,
  API_PATH,
  EVENTS_PATH,
  PROXY_PATH,
  type Scenario,
  STORE_CREATE_PATH,
  STORE_PATH,
} from "./scene.ts";

export const FAULTS = {
  "500": { type: "status", code: 500 },
  "503": { type: "status", code: 503 },
  "429 Retry-After": { type: "status", code: 429, retryAfter: 1 },
  "409": { type: "status", code: 409, reason: "Conflict" },
  "hang > timeout": { type: "hang" },
  reset: { type: "reset" },
  malformed: { type: "malformed" },
  "slow < timeout": { type: "delay", ms: 300 },
  "answer lost": { type: "lost" },
} satisfies Record<string, Fault>;
export type FaultName = keyof typeof FAULTS;
export const FAULT_NAMES = Object.keys(FAULTS) as FaultName[];

export interface Expect {
  outcome: string;
  /** Each image's verdict in the closing line; an image left out is not checked. */
  verdicts?: Record<string, string>;
  /** refresh-attempt-<key> after the tick; null = absent; a key left out is not checked. */
  attempts?: Record<string, string | null>;
  /** skip-streak-<key> after the tick; null = absent; a key left out is not checked. */
  skips?: Record<string, string | null>;
  /** unresolved-streak-<key> after the tick; null = absent; a key left out is not checked. */
  streaks?: Record<string, string | null>;
  /** refresh-flap-detected-<key> after the tick: true = set, false = absent; a key left out is not checked. */
  markers?: Record<string, boolean>;
  /** Workloads whose image patch was answered 2xx, in order; undefined = not checked. */
  patched?: string[];
  /** No write at all reached the API server. */
  noWrites?: boolean;
}

export interface Row {
  name: string;
  scenario: Scenario;
  target: {
    server: "api" | "registry";
    method: string;
    path: string | RegExp;
    skip?: number;
    read?: boolean;
  };
  /** Under a fault (every column but the slow one and those in `healthy`). */
  fault: Expect;
  /**
   * Writes only: the write landed but its answer was lost. The tick must take the failure path
   * (it cannot know), and the cluster shows what did land. Default: as `fault`.
   */
  lost?: Expect;
  /** With the slow-but-in-time fault: the scene's normal course. */
  healthy: Expect;
  /** Under a 429: its registry is called no more this tick. Default: as `fault`. */
  quota?: Expect;
  /** Columns that behave like `healthy` (a conflict that a re-read resolves). */
  recovers?: FaultName[];
  /** Columns that do not apply to this request. */
  na?: FaultName[];
  /** Columns with an expectation of their own (the rules treat that fault differently). */
  columns?: Partial<Record<FaultName, Expect>>;
  /** rolloutTimeout; default 2000. */
  rolloutMs?: number;
  /** api-proxy rolls out slowly enough that the rollout wait must watch. */
  slowProxy?: boolean;
  /** The store holds the registry's answer to GET /v2/ from an earlier tick: no probe. */
  remembered?: boolean;
}

const ALL = ["api", "api-proxy", "node-agent"];
const NO_409: FaultName[] = ["409"];
const BOTH = <T>(v: T) => ({ api: v, "node-agent": v });
const refreshed: Expect = {
  outcome: "refreshed",
  verdicts: { api: "refreshed", "node-agent": "refreshed" },
  attempts: BOTH(null),
  patched: ALL,
};
/** api's group failed (api, api-proxy); node-agent shares no workload with it, so it refreshed. */
const apiFailed = (patched: string[]): Expect => ({
  outcome: "failed",
  verdicts: { api: "failed", "node-agent": "refreshed" },
  attempts: { api: "1", "node-agent": null },
  patched,
});
/** Neither image resolved: both unresolved with a streak of 1, nothing patched (never noop). */
const blind: Expect = {
  outcome: "unresolved",
  verdicts: { api: "unresolved", "node-agent": "unresolved" },
  streaks: BOTH("1"),
  attempts: BOTH(null),
  patched: [],
};
// The list and watch of api-proxy's rollout wait; "=" is %3D in the query string.
const proxyList = /deployments\?(?!.*watch=1)(?=.*fieldSelector=metadata\.name%3Dapi-proxy(&|$))/;
const proxyWatch = /deployments\?(?=.*watch=1)(?=.*fieldSelector=metadata\.name%3Dapi-proxy(&|$))/;

export const ROWS: Row[] = [
  {
    name: "store GET",
    scenario: "unchanged",
    target: { server: "api", method: "GET", path: STORE_PATH, read: true },
    fault: { outcome: "error", noWrites: true },
    healthy: { outcome: "noop", verdicts: { api: "noop", "node-agent": "noop" }, noWrites: true },
    na: NO_409,
  },
  {
    name: "streak write",
    scenario: "unsettled",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    fault: { outcome: "error" },
    healthy: { outcome: "skipped" },
    recovers: ["409"],
  },
  {
    name: "streak clear",
    scenario: "settling",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    // Nothing due: the removal is the tick's only write, and its failure only a WARNING.
    fault: { outcome: "noop", verdicts: BOTH("noop"), skips: BOTH("2"), patched: [] },
    healthy: { outcome: "noop", verdicts: BOTH("noop"), skips: BOTH(null), patched: [] },
    recovers: ["409"],
    lost: { outcome: "noop", verdicts: BOTH("noop"), skips: BOTH(null), patched: [] },
  },
  {
    name: "attempt write (with the streak clear)",
    scenario: "streak",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    // The removal rides with the counts: unwritten, nothing is counted, so nothing is patched.
    fault: {
      outcome: "held",
      verdicts: { api: "held", "node-agent": "held" },
      attempts: BOTH(null),
      skips: BOTH("2"),
      patched: [],
    },
    healthy: { ...refreshed, skips: BOTH(null) },
    recovers: ["409"],
    lost: { outcome: "held", attempts: BOTH("1"), skips: BOTH(null), patched: [] },
  },
  {
    name: "registry probe",
    scenario: "changed",
    target: { server: "registry", method: "GET", path: "/v2/", read: true },
    fault: blind,
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "registry token",
    scenario: "changed",
    target: { server: "registry", method: "GET", path: "/token", read: true },
    fault: blind,
    healthy: refreshed,
    na: NO_409,
  },
  {
    // The remembered realm's token request fails: the tick asks the API root once and tries the
    // token again (the fault is on every token request, so that fails too).
    name: "registry token, remembered answer",
    scenario: "changed",
    remembered: true,
    target: { server: "registry", method: "GET", path: "/token", read: true },
    fault: blind,
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "registry HEAD (api)",
    scenario: "changed",
    target: { server: "registry", method: "HEAD", path: "/v2/myorg/api/manifests/stable", read: true },
    // api is blind this tick and counts it; node-agent's refresh does not wait for it.
    fault: {
      outcome: "unresolved",
      verdicts: { api: "unresolved", "node-agent": "refreshed" },
      streaks: { api: "1", "node-agent": null },
      attempts: BOTH(null),
      patched: ["node-agent"],
    },
    healthy: refreshed,
    na: NO_409,
    // A 429 is the registry's, not the image's: myorg/api's HEAD is the registry's first and goes
    // alone, so after its 429 node-agent is not asked either.
    columns: {
      "429 Retry-After": {
        outcome: "unresolved",
        verdicts: { api: "unresolved", "node-agent": "unresolved" },
        streaks: { api: "1", "node-agent": "1" },
        patched: [],
      },
    },
  },
  {
    name: "unresolved streak write",
    scenario: "unresolved",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    // An uncounted streak is how an image goes blind quietly: the tick fails.
    fault: { outcome: "error", streaks: { api: null }, patched: [] },
    healthy: {
      outcome: "unresolved",
      verdicts: { api: "unresolved", "node-agent": "noop" },
      streaks: { api: "1" },
      patched: [],
    },
    recovers: ["409"],
    lost: { outcome: "error", streaks: { api: "1" }, patched: [] },
  },
  {
    name: "stale Event post",
    scenario: "stale",
    target: { server: "api", method: "POST", path: EVENTS_PATH },
    // An Event that cannot be posted is a WARNING: the image is stale all the same.
    fault: {
      outcome: "stale",
      verdicts: { api: "stale", "node-agent": "noop" },
      streaks: { api: "8" },
      patched: [],
    },
    healthy: {
      outcome: "stale",
      verdicts: { api: "stale", "node-agent": "noop" },
      streaks: { api: "8" },
      patched: [],
    },
  },
  {
    name: "target GET (api-proxy)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: PROXY_PATH, read: true },
    // api cannot start safely; node-agent shares no workload with it and refreshes.
    fault: {
      outcome: "held",
      verdicts: { api: "held", "node-agent": "refreshed" },
      attempts: BOTH(null),
      patched: ["node-agent"],
    },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "target GET (api)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: API_PATH, read: true },
    fault: {
      outcome: "held",
      verdicts: { api: "held", "node-agent": "refreshed" },
      attempts: BOTH(null),
      patched: ["node-agent"],
    },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "target GET (node-agent), nothing due",
    scenario: "unchanged",
    target: { server: "api", method: "GET", path: AGENT_PATH, read: true },
    // Every settled tick reads its targets, so an unreadable one holds its image even
    // with nothing due; api's targets were read and it stays a quiet no-op.
    fault: {
      outcome: "held",
      verdicts: { api: "noop", "node-agent": "held" },
      attempts: BOTH(null),
      patched: [],
    },
    healthy: { outcome: "noop", verdicts: { api: "noop", "node-agent": "noop" }, noWrites: true },
    na: NO_409,
  },
  {
    name: "flap marker",
    scenario: "lockout",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    // Both images' markers go in one store write: unwritten, the tick fails and nothing moves.
    fault: { outcome: "error", markers: BOTH(false), attempts: BOTH("3"), patched: [] },
    healthy: {
      outcome: "locked_out",
      verdicts: { api: "locked_out", "node-agent": "locked_out" },
      markers: BOTH(true),
      attempts: BOTH("3"),
      patched: [],
    },
    recovers: ["409"],
    lost: { outcome: "error", markers: BOTH(true), attempts: BOTH("3"), patched: [] },
  },
  {
    name: "attempt write",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STORE_PATH },
    fault: {
      outcome: "held",
      verdicts: { api: "held", "node-agent": "held" },
      attempts: BOTH(null),
      patched: [],
    },
    healthy: refreshed,
    recovers: ["409"],
    // The counts landed; no workload was touched, so the next tick simply counts on from them.
    lost: { outcome: "held", attempts: BOTH("1"), patched: [] },
  },
  {
    name: "patch api",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: API_PATH },
    fault: apiFailed(["node-agent"]),
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "patch api-proxy",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: PROXY_PATH },
    // onFailure: revert puts api back (its second patch) before node-agent goes on.
    fault: apiFailed(["api", "api", "node-agent"]),
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "patch node-agent",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: AGENT_PATH },
    // node-agent failed; api shares no workload with it: reset and recorded in the same tick.
    fault: {
      outcome: "failed",
      verdicts: { api: "refreshed", "node-agent": "failed" },
      attempts: { api: null, "node-agent": "1" },
      patched: ["api", "api-proxy"],
    },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "rollout list (api-proxy)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: proxyList, read: true },
    // A list that keeps failing is survivable: at the deadline one GET judges the rollout, and
    // api-proxy did settle. A malformed list is terminal: the group fails and is reverted, newest first.
    fault: refreshed,
    columns: { malformed: apiFailed(["api", "api-proxy", "api-proxy", "api", "node-agent"]) },
    healthy: refreshed,
    na: NO_409,
    rolloutMs: 4000,
  },
  {
    name: "rollout watch (api-proxy)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: proxyWatch, read: true },
    // A broken watch is survivable: the wait re-lists and sees the rollout finish.
    fault: refreshed,
    healthy: refreshed,
    na: NO_409,
    rolloutMs: 4000,
    slowProxy: true,
  },
  {
    name: "reset",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STORE_PATH, skip: 1 },
    // One reset carries both images' counts: both stay counted, neither digest is recorded.
    fault: {
      outcome: "failed",
      verdicts: { api: "failed", "node-agent": "failed" },
      attempts: BOTH("1"),
      patched: ALL,
    },
    healthy: refreshed,
    recovers: ["409"],
    // The reset landed: the counts are gone although the tick could not know it.
    lost: { outcome: "failed", attempts: BOTH(null), patched: ALL },
  },
  {
    name: "digest record",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STORE_PATH, skip: 2 },
    // The reset has already landed: a failed record never strands a count.
    fault: {
      outcome: "failed",
      verdicts: { api: "failed", "node-agent": "failed" },
      attempts: BOTH(null),
      patched: ALL,
    },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "store create (first observation)",
    scenario: "first",
    target: { server: "api", method: "POST", path: STORE_CREATE_PATH },
    fault: { outcome: "error", patched: [] },
    healthy: { outcome: "recorded", verdicts: { api: "recorded", "node-agent": "recorded" }, patched: [] },
    // A create is its own precondition: a 409 means another tick created the store, so the tick
    // re-reads it (still absent here) and decides again.
    recovers: ["409"],
  },
  {
    name: "event post (Refreshed)",
    scenario: "changed",
    target: { server: "api", method: "POST", path: EVENTS_PATH },
    fault: refreshed,
    healthy: refreshed,
  },
];

/** What a cell must show, or undefined when the fault does not apply to the request. */
export function expected(row: Row, fault: FaultName): Expect | undefined {
  if (row.na?.includes(fault)) return undefined;
  const own = row.columns?.[fault];
  if (own) return own;
  if (fault === "answer lost") return row.target.read ? undefined : (row.lost ?? row.fault);
  if (fault === "slow < timeout" || row.recovers?.includes(fault)) return row.healthy;
  if (fault === "429 Retry-After" && row.quota) return row.quota;
  return row.fault;
}
