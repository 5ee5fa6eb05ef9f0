// The base world of the plan tables: docs/configuration.md's example (api on two Deployments, node-agent on a
// DaemonSet), both recorded, every target pinned to its recorded digest by image-refresh itself.

import { expect, test } from "bun:test";
import { type Config, parseConfig } from "../../lib/config.ts";
import { exampleConfig } from "../../lib/example-config.ts";
import { parseBook } from "../../lib/state/book.ts";
import { applyChange } from "../../lib/state/change.ts";
import type { Action, Decision, ImageVerdict, Observed } from "../../lib/tick/model.ts";
import { targetsOf } from "../../lib/tick/plan/combine.ts";
import { plan } from "../../lib/tick/plan/plan.ts";

export const D = (c: string) => `sha256:${c.repeat(64)}`;
export const ours = { manager: "image-refresh", operation: "Update", time: "2026-12-01T10:00:00Z" };
export const helm = { manager: "helm", operation: "Update", time: "2026-12-01T11:00:00Z" };
export const P = "image-refresh.io";

export function config(tweak: (c: any) => void = () => {}): Config {
  const c: any = exampleConfig();
  tweak(c);
  return parseConfig(JSON.stringify(c), {});
}

export function observed(tweak: (o: Observed) => void = () => {}): Observed {
  const data = { "last-refreshed-api-digest": D("a"), "last-refreshed-node-agent-digest": D("b") };
  const settled = { settled: true, settleMessage: "successfully rolled out" };
  const o: Observed = {
    book: parseBook({ resourceVersion: "1", data }, ["api", "node-agent"]),
    clock: Date.parse("2026-12-01T12:00:00Z"),
    digests: { api: { ok: true, digest: D("a") }, "node-agent": { ok: true, digest: D("b") } },
    workloads: {
      "Deployment/apps/api": {
        found: true,
        images: { api: `docker.io/myorg/api@${D("a")}`, sidecar: "envoy" },
        owners: { api: [ours], sidecar: [helm] },
        ...settled,
      },
      "Deployment/apps/api-proxy": {
        found: true,
        images: { proxy: `docker.io/myorg/api@${D("a")}`, agent: `docker.io/myorg/node-agent@${D("b")}` },
        owners: { proxy: [ours], agent: [ours] },
        ...settled,
      },
      "DaemonSet/agents/node-agent": {
        found: true,
        images: { agent: `docker.io/myorg/node-agent@${D("b")}` },
        owners: { agent: [ours] },
        ...settled,
      },
    },
  };
  tweak(o);
  return o;
}

/** Sets (or, with undefined, removes) a key of the store's book. */
export const ann = (o: Observed, key: string, value: string | undefined) => {
  o.book = applyChange(o.book, { [key]: value ?? null });
};
export const newApi = (o: Observed) => {
  o.digests = { ...o.digests, api: { ok: true, digest: D("c") } };
};
export const newAgent = (o: Observed) => {
  o.digests = { ...o.digests, "node-agent": { ok: true, digest: D("e") } };
};
export const agentFails =
  (failure = "not_found") =>
  (o: Observed) => {
    o.digests = { ...o.digests, "node-agent": { ok: false, failure, message: "manifest HEAD answered 404" } };
  };
/** Deployment apps/api (a target of api) has not settled. */
export const unsettled = (o: Observed) => {
  const w = o.workloads?.["Deployment/apps/api"];
  if (w?.found)
    Object.assign(w, {
      settled: false,
      settleMessage: "Waiting for deployment spec update to be observed...",
    });
};
export const both =
  (...fs: Array<(o: Observed) => void>) =>
  (o: Observed) => {
    for (const f of fs) f(o);
  };
/** node-agent also runs in Deployment api-proxy: the two images share a workload. */
export const shareProxy = (c: any) =>
  c.images[1].targets.push({ kind: "Deployment", name: "api-proxy", container: "agent" });

type StateWriteAction = Extract<Action, { type: "write-state" }>;
/** A count given alone: the digest tried is the one the case's expected rollouts of that image name. */
const DUE = "<the digest the expected rollouts name>";
export const write = (
  w: Partial<Omit<StateWriteAction, "attempts">> & {
    attempts?: Record<string, number | { count: number; digest: string }>;
  },
): Action => ({
  type: "write-state",
  change: {},
  repins: [],
  streaks: [],
  flaps: [],
  firstSeen: [],
  ...w,
  attempts: Object.fromEntries(
    Object.entries(w.attempts ?? {}).map(([k, v]) => [
      k,
      typeof v === "number" ? { count: v, digest: DUE } : v,
    ]),
  ),
});
export const roll = (
  name: string,
  containers: Array<[string, string]>,
  images: string[],
  group = 0,
): Action => ({
  type: "rollout",
  workload:
    name === "node-agent"
      ? { kind: "DaemonSet", namespace: "agents", name }
      : { kind: "Deployment", namespace: "apps", name },
  containers: containers.map(([n, image]) => ({ name: n, image })),
  images,
  group,
});
export const API_C = `docker.io/myorg/api@${D("c")}`;
export const AGENT_E = `docker.io/myorg/node-agent@${D("e")}`;
/** api refreshed to c alone: its count, one rollout per workload in config order, reset, record. */
export const REFRESH_API: Expected[] = [
  write({ attempts: { api: 1 } }),
  roll("api", [["api", API_C]], ["api"]),
  roll("api-proxy", [["proxy", API_C]], ["api"]),
  { type: "reset", counts: { api: 1 } },
  { type: "record-digests", digests: { api: D("c") } },
];
/** node-agent refreshed to e alone. */
export const REFRESH_AGENT: Expected[] = [
  write({ attempts: { "node-agent": 1 } }),
  roll("node-agent", [["agent", AGENT_E]], ["node-agent"]),
  { type: "reset", counts: { "node-agent": 1 } },
  { type: "record-digests", digests: { "node-agent": D("e") } },
];
/** Both refreshed, sharing no workload: one count write, two groups, one reset and one record. */
export const REFRESH_BOTH: Expected[] = [
  write({ attempts: { api: 1, "node-agent": 1 } }),
  roll("api", [["api", API_C]], ["api"]),
  roll("api-proxy", [["proxy", API_C]], ["api"]),
  roll("node-agent", [["agent", AGENT_E]], ["node-agent"], 1),
  { type: "reset", counts: { api: 1, "node-agent": 1 } },
  { type: "record-digests", digests: { api: D("c"), "node-agent": D("e") } },
];
/** Both refreshed with shareProxy: one group, and one patch of api-proxy sets both containers. */
export const REFRESH_BOTH_SHARED: Expected[] = [
  write({ attempts: { api: 1, "node-agent": 1 } }),
  roll("api", [["api", API_C]], ["api"]),
  roll(
    "api-proxy",
    [
      ["proxy", API_C],
      ["agent", AGENT_E],
    ],
    ["api", "node-agent"],
  ),
  roll("node-agent", [["agent", AGENT_E]], ["node-agent"]),
  { type: "reset", counts: { api: 1, "node-agent": 1 } },
  { type: "record-digests", digests: { api: D("c"), "node-agent": D("e") } },
];

/** An image's verdict in the base world (noop, unchanged), with the given fields changed. */
export const verdictOf = (key: string, v: Partial<ImageVerdict> = {}): ImageVerdict => ({
  key,
  repository: `myorg/${key}`,
  outcome: "noop",
  reason: "unchanged",
  message: `${key} unchanged`,
  paused: false,
  verified: true,
  ...v,
});

type EventAction = Extract<Action, { type: "event" }>;
/** An expected action; an image Event may leave out `regarding` (then: that image's targets). */
export type Expected = Action | (Omit<EventAction, "regarding"> & { regarding?: EventAction["regarding"] });

export type Case = {
  name: string;
  o?: (o: Observed) => void;
  c?: (c: any) => void;
  outcome: Decision["outcome"];
  reason?: Decision["reason"];
  /** Each image's verdict as `outcome/reason`. */
  images?: Record<string, string>;
  actions: Expected[];
};

export const verdicts = (d: Decision) =>
  Object.fromEntries(d.images.map((v) => [v.key, `${v.outcome}/${v.reason}`]));

/** One test per case: the outcome, each image's verdict and every action, compared whole. */
export function runCases(cases: Case[]): void {
  for (const tc of cases) {
    test(tc.name, () => {
      const o = observed(tc.o);
      const d = plan(o, config(tc.c));
      expect(d.outcome).toBe(tc.outcome);
      if (tc.reason) expect(d.reason).toBe(tc.reason);
      if (tc.images) expect(verdicts(d)).toEqual(tc.images);
      expect(d.actions).toEqual(withBefore(tc.actions, o, config(tc.c)));
    });
  }
}

/**
 * Each expected rollout container with the image it ran as observed (what a revert restores), and
 * each expected image Event about that image's targets unless the case names the workloads.
 */
export function withBefore(actions: Expected[], o: Observed, c?: Config): Action[] {
  const tried = (key: string) => {
    for (const a of actions)
      if (a.type === "rollout" && a.images.includes(key)) {
        const mine = a.containers.find((x) => x.image.includes(`/${key}@`)) ?? a.containers[0];
        return mine?.image.split("@")[1] ?? DUE;
      }
    return DUE;
  };
  return actions.map((a): Action => {
    if (a.type === "write-state") {
      const attempts = Object.fromEntries(
        Object.entries(a.attempts).map(([k, v]) => [k, v.digest === DUE ? { ...v, digest: tried(k) } : v]),
      );
      return { ...a, attempts };
    }
    if (a.type === "event") {
      if (a.regarding) return a as EventAction;
      const img = c?.images.find((i) => i.key === a.image);
      return { ...a, regarding: img ? targetsOf(img) : [] };
    }
    if (a.type !== "rollout") return a;
    const seen = o.workloads?.[`${a.workload.kind}/${a.workload.namespace}/${a.workload.name}`];
    const images: Record<string, string> = seen?.found ? seen.images : {};
    const containers = a.containers.map((c) => {
      const before = images[c.name];
      return before === undefined ? c : { ...c, before };
    });
    return { ...a, containers };
  });
}
