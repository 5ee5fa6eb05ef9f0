// The fault matrix as data: every request a tick can make, the scene that reaches it, and what
// SPEC says the tick must do when that request fails. Reads get the fault on every try (their
// retries must not hide a server that stays broken); writes get it once, since they are never
// retried and a later request on the same path is another step of the story.
import type { Fault } from "../../sim/faults.ts";
import { AGENT_PATH, EVENTS_PATH, PROXY_PATH, type Scenario, STATE_PATH } from "./scene.ts";

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
  /** refresh-attempt after the tick; null = absent; undefined = not checked. */
  attempt?: string | null;
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
  /** Under a 429: its registry is called no more this tick (SPEC step 5). Default: as `fault`. */
  quota?: Expect;
  /** Columns that behave like `healthy` (a conflict that a re-read resolves). */
  recovers?: FaultName[];
  /** Columns that do not apply to this request. */
  na?: FaultName[];
  /** rolloutTimeout; default 2000. */
  rolloutMs?: number;
  /** api-proxy rolls out slowly enough that the rollout wait must watch. */
  slowProxy?: boolean;
}

const ALL = ["api", "api-proxy", "node-agent"];
const NO_409: FaultName[] = ["409"];
const refreshed: Expect = { outcome: "refreshed", attempt: null, patched: ALL };
const failedAfter = (patched: string[]): Expect => ({ outcome: "failed", attempt: "1", patched });
// The list and watch of api-proxy's rollout wait; "=" is %3D in the query string.
const proxyList = /deployments\?(?!.*watch=1)(?=.*fieldSelector=metadata\.name%3Dapi-proxy(&|$))/;
const proxyWatch = /deployments\?(?=.*watch=1)(?=.*fieldSelector=metadata\.name%3Dapi-proxy(&|$))/;

export const ROWS: Row[] = [
  {
    name: "state GET",
    scenario: "unchanged",
    target: { server: "api", method: "GET", path: STATE_PATH, read: true },
    fault: { outcome: "error", noWrites: true },
    healthy: { outcome: "noop", noWrites: true },
    na: NO_409,
  },
  {
    name: "streak write",
    scenario: "unsettled",
    target: { server: "api", method: "PATCH", path: STATE_PATH },
    fault: { outcome: "error" },
    healthy: { outcome: "skipped" },
    recovers: ["409"],
  },
  {
    name: "streak clear",
    scenario: "streak",
    target: { server: "api", method: "PATCH", path: STATE_PATH },
    fault: refreshed,
    healthy: refreshed,
  },
  {
    name: "registry probe",
    scenario: "changed",
    target: { server: "registry", method: "GET", path: "/v2/", read: true },
    fault: { outcome: "noop", noWrites: true },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "registry token",
    scenario: "changed",
    target: { server: "registry", method: "GET", path: "/token", read: true },
    fault: { outcome: "noop", noWrites: true },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "registry HEAD (api)",
    scenario: "changed",
    target: { server: "registry", method: "HEAD", path: "/v2/myorg/api/manifests/stable", read: true },
    fault: { outcome: "refreshed", attempt: null, patched: ["node-agent"] },
    // myorg/api's HEAD is the registry's first: after its 429, node-agent is not asked either.
    quota: { outcome: "noop", attempt: null, patched: [] },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "target GET (api-proxy)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: PROXY_PATH, read: true },
    fault: { outcome: "held", noWrites: true },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "flap marker",
    scenario: "lockout",
    target: { server: "api", method: "PATCH", path: STATE_PATH },
    fault: { outcome: "error", attempt: "3", patched: [] },
    healthy: { outcome: "locked_out", attempt: "3", patched: [] },
    recovers: ["409"],
  },
  {
    name: "attempt write",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STATE_PATH },
    fault: { outcome: "held", attempt: null, patched: [] },
    healthy: refreshed,
    recovers: ["409"],
    // The count landed; no workload was touched, so the next tick simply counts on from it.
    lost: { outcome: "held", attempt: "1", patched: [] },
  },
  {
    name: "patch api (the state object)",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STATE_PATH, skip: 1 },
    fault: failedAfter([]),
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "patch api-proxy",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: PROXY_PATH },
    fault: failedAfter(["api"]),
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "patch node-agent",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: AGENT_PATH },
    fault: failedAfter(["api", "api-proxy"]),
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "rollout list (api-proxy)",
    scenario: "changed",
    target: { server: "api", method: "GET", path: proxyList, read: true },
    fault: failedAfter(["api", "api-proxy"]),
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
    target: { server: "api", method: "PATCH", path: STATE_PATH, skip: 2 },
    fault: failedAfter(ALL),
    healthy: refreshed,
    recovers: ["409"],
    // The reset landed: the count is gone although the tick could not know it.
    lost: { outcome: "failed", attempt: null, patched: ALL },
  },
  {
    name: "digest record",
    scenario: "changed",
    target: { server: "api", method: "PATCH", path: STATE_PATH, skip: 3 },
    // The reset has already landed: a failed record never strands a count.
    fault: { outcome: "failed", attempt: null, patched: ALL },
    healthy: refreshed,
    na: NO_409,
  },
  {
    name: "digest record (first observation)",
    scenario: "first",
    target: { server: "api", method: "PATCH", path: STATE_PATH },
    fault: { outcome: "error", patched: [] },
    healthy: { outcome: "recorded", patched: [] },
    na: NO_409,
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
  if (fault === "answer lost") return row.target.read ? undefined : (row.lost ?? row.fault);
  if (fault === "slow < timeout" || row.recovers?.includes(fault)) return row.healthy;
  if (fault === "429 Retry-After" && row.quota) return row.quota;
  return row.fault;
}
