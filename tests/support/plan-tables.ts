// The base world of the plan tables: SPEC's example (api on two Deployments, node-agent on a
// DaemonSet), both recorded, every target pinned to its recorded digest by image-refresh itself.

import { expect, test } from "bun:test";
import { type Config, parseConfig } from "../../lib/config.ts";
import { exampleConfig } from "../../lib/example-config.ts";
import type { Action, Decision, Observed } from "../../lib/tick/model.ts";
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
  const o: Observed = {
    state: {
      settled: true,
      settleMessage: 'deployment "api" successfully rolled out',
      annotations: {
        [`${P}/last-refreshed-api-digest`]: D("a"),
        [`${P}/last-refreshed-node-agent-digest`]: D("b"),
      },
    },
    digests: { api: { ok: true, digest: D("a") }, "node-agent": { ok: true, digest: D("b") } },
    workloads: {
      "Deployment/apps/api": {
        found: true,
        images: { api: `docker.io/myorg/api@${D("a")}`, sidecar: "envoy" },
        owners: { api: [ours], sidecar: [helm] },
      },
      "Deployment/apps/api-proxy": {
        found: true,
        images: { proxy: `docker.io/myorg/api@${D("a")}`, agent: `docker.io/myorg/node-agent@${D("b")}` },
        owners: { proxy: [ours], agent: [ours] },
      },
      "DaemonSet/agents/node-agent": {
        found: true,
        images: { agent: `docker.io/myorg/node-agent@${D("b")}` },
        owners: { agent: [ours] },
      },
    },
  };
  tweak(o);
  return o;
}

export const ann = (o: Observed, key: string, value: string | undefined) => {
  if (value === undefined) delete o.state.annotations[`${P}/${key}`];
  else o.state.annotations[`${P}/${key}`] = value;
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
export const unsettled = (o: Observed) => {
  o.state.settled = false;
  o.state.settleMessage = "Waiting for deployment spec update to be observed...";
  delete o.digests;
  delete o.workloads;
};
export const both =
  (...fs: Array<(o: Observed) => void>) =>
  (o: Observed) => {
    for (const f of fs) f(o);
  };
/** node-agent also runs in Deployment api-proxy: the two images share a workload. */
export const shareProxy = (c: any) =>
  c.images[1].targets.push({ kind: "Deployment", name: "api-proxy", container: "agent" });

export const write = (w: Partial<Extract<Action, { type: "write-state" }>>): Action => ({
  type: "write-state",
  annotations: {},
  attempts: {},
  repins: [],
  streaks: [],
  flaps: [],
  firstSeen: [],
  ...w,
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
export const REFRESH_API: Action[] = [
  write({ attempts: { api: 1 } }),
  roll("api", [["api", API_C]], ["api"]),
  roll("api-proxy", [["proxy", API_C]], ["api"]),
  { type: "reset", counts: { api: 1 } },
  { type: "record-digests", digests: { api: D("c") } },
];

export type Case = {
  name: string;
  o?: (o: Observed) => void;
  c?: (c: any) => void;
  outcome: Decision["outcome"];
  reason?: Decision["reason"];
  /** Each image's verdict as `outcome/reason`. */
  images?: Record<string, string>;
  actions: Action[];
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
      expect(d.actions).toEqual(withBefore(tc.actions, o));
    });
  }
}

/** Each expected rollout container with the image it ran as observed: what a revert restores. */
export function withBefore(actions: Action[], o: Observed): Action[] {
  return actions.map((a) => {
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
