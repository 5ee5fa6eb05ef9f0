import { describe, expect, test } from "bun:test";
import { type Config, parseConfig } from "../config.ts";
import { exampleConfig } from "../example-config.ts";
import type { Action, Decision, Observed } from "./model.ts";
import { needsTargets, plan, targetsToRead } from "./plan.ts";

const D = (c: string) => `sha256:${c.repeat(64)}`;
const P = "image-refresh.io";

function config(tweak: (c: any) => void = () => {}): Config {
  const c: any = exampleConfig();
  tweak(c);
  return parseConfig(JSON.stringify(c), {});
}

function observed(tweak: (o: Observed) => void = () => {}): Observed {
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
      "Deployment/apps/api": { found: true, images: { api: "docker.io/myorg/api:stable", sidecar: "envoy" } },
      "Deployment/apps/api-proxy": { found: true, images: { proxy: "docker.io/myorg/api:stable" } },
      "DaemonSet/agents/node-agent": { found: true, images: { agent: "docker.io/myorg/node-agent:stable" } },
    },
  };
  tweak(o);
  return o;
}

const ann = (o: Observed, key: string, value: string | undefined) => {
  if (value === undefined) delete o.state.annotations[`${P}/${key}`];
  else o.state.annotations[`${P}/${key}`] = value;
};
const newApi = (o: Observed) => {
  o.digests = { ...o.digests, api: { ok: true, digest: D("c") } };
};
const unsettled = (o: Observed) => {
  o.state.settled = false;
  o.state.settleMessage = "Waiting for deployment spec update to be observed...";
  delete o.digests;
  delete o.workloads;
};
const REFRESH_API: Action[] = [
  { type: "persist-attempt", count: 1 },
  {
    type: "rollout",
    workload: { kind: "Deployment", namespace: "apps", name: "api" },
    containers: [{ name: "api", image: `docker.io/myorg/api@${D("c")}` }],
    images: ["api"],
  },
  {
    type: "rollout",
    workload: { kind: "Deployment", namespace: "apps", name: "api-proxy" },
    containers: [{ name: "proxy", image: `docker.io/myorg/api@${D("c")}` }],
    images: ["api"],
  },
  { type: "reset" },
  { type: "record-digests", digests: { api: D("c") } },
  { type: "event", eventType: "Normal", reason: "Refreshed", note: `refreshed myorg/api → ${D("c")}` },
];

type Case = {
  name: string;
  o?: (o: Observed) => void;
  c?: (c: any) => void;
  want: Partial<Decision> & { actions?: unknown[] };
};
const cases: Case[] = [
  {
    name: "healthy and unchanged writes nothing",
    want: { outcome: "noop", reason: "unchanged", actions: [] },
  },
  {
    name: "a recorded streak is cleared on a settled tick",
    o: (o) => ann(o, "refresh-skip-streak", "3"),
    want: { outcome: "noop", actions: [{ type: "clear-streak" }] },
  },
  {
    name: "an untrusted streak is cleared like any streak when settled",
    o: (o) => ann(o, "refresh-skip-streak", "x"),
    want: { outcome: "noop", actions: [{ type: "clear-streak" }] },
  },
  {
    name: "first observation records and touches no workload",
    o: (o) => ann(o, "last-refreshed-node-agent-digest", undefined),
    want: {
      outcome: "recorded",
      reason: "first_observation",
      actions: [{ type: "record-digests", digests: { "node-agent": D("b") } }],
    },
  },
  {
    name: "a registry failure skips that image only",
    o: (o) => {
      o.digests = { ...o.digests, api: { ok: false, message: "timeout" } };
      ann(o, "last-refreshed-node-agent-digest", undefined);
    },
    want: { outcome: "recorded", actions: [{ type: "record-digests", digests: { "node-agent": D("b") } }] },
  },
  {
    name: "a pinned image is never refreshed",
    c: (c) => (c.images[0].pinned = true),
    o: newApi,
    want: { outcome: "noop", actions: [] },
  },
  {
    name: "a changed digest persists attempt 1, rolls each workload, resets, records, posts an Event",
    o: newApi,
    want: {
      outcome: "refreshed",
      reason: "digest_changed",
      changed: ["api"],
      actions: REFRESH_API,
      after: { attemptCount: 0, skipStreak: 0, lockedOut: false, frozen: false },
    },
  },
  {
    name: "a streak is cleared before the attempt is persisted",
    o: (o) => {
      newApi(o);
      ann(o, "refresh-skip-streak", "2");
    },
    want: { outcome: "refreshed", actions: [{ type: "clear-streak" }, ...REFRESH_API] },
  },
  {
    name: "attempt 2 becomes 3",
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", "2");
    },
    want: { outcome: "refreshed", actions: [{ type: "persist-attempt", count: 3 }, ...REFRESH_API.slice(1)] },
  },
  {
    name: "count at the maximum locks out and marks the flap once",
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", "3");
    },
    want: {
      outcome: "locked_out",
      reason: "flap_lockout",
      after: { attemptCount: 3, skipStreak: 0, lockedOut: true, frozen: false },
    },
  },
  {
    name: "a held lockout writes nothing more",
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", "3");
      ann(o, "refresh-flap-detected", "3");
    },
    want: { outcome: "locked_out", actions: [] },
  },
  {
    name: "a lockout still records a first observation",
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", "4");
      ann(o, "refresh-flap-detected", "3");
      ann(o, "last-refreshed-node-agent-digest", undefined);
    },
    want: { outcome: "locked_out", actions: [{ type: "record-digests", digests: { "node-agent": D("b") } }] },
  },
  {
    name: "raising maxRefreshAttempts above the count lifts the lockout",
    c: (c) => (c.maxRefreshAttempts = 5),
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", "3");
      ann(o, "refresh-flap-detected", "3");
    },
    want: { outcome: "refreshed", actions: [{ type: "persist-attempt", count: 4 }, ...REFRESH_API.slice(1)] },
  },
  {
    name: "a missing container holds the refresh",
    o: (o) => {
      newApi(o);
      o.workloads!["Deployment/apps/api-proxy"] = { found: true, images: { envoy: "x" } };
    },
    want: { outcome: "held", reason: "target_unavailable", actions: [] },
  },
  {
    name: "an unreadable target holds the refresh",
    o: (o) => {
      newApi(o);
      o.workloads!["Deployment/apps/api"] = { found: false, message: "Forbidden (403)" };
    },
    want: { outcome: "held", reason: "target_unavailable", actions: [] },
  },
  {
    name: "unsettled with no streak skips tick 1",
    o: unsettled,
    want: {
      outcome: "skipped",
      reason: "not_settled",
      actions: [{ type: "write-streak", value: 1 }],
      after: { attemptCount: 0, skipStreak: 1, lockedOut: false, frozen: false },
    },
  },
  {
    name: "unsettled below the ceiling skips",
    o: (o) => {
      unsettled(o);
      ann(o, "refresh-skip-streak", "6");
    },
    want: { outcome: "skipped", actions: [{ type: "write-streak", value: 7 }] },
  },
  {
    name: "unsettled reaching the ceiling freezes and posts one Event",
    o: (o) => {
      unsettled(o);
      ann(o, "refresh-skip-streak", "7");
    },
    want: {
      outcome: "frozen",
      reason: "skip_ceiling",
      after: { attemptCount: 0, skipStreak: 8, lockedOut: false, frozen: true },
    },
  },
  {
    name: "unsettled past the ceiling stays frozen without another Event",
    o: (o) => {
      unsettled(o);
      ann(o, "refresh-skip-streak", "8");
    },
    want: { outcome: "frozen", actions: [{ type: "write-streak", value: 9 }] },
  },
  {
    name: "an untrusted streak on an unsettled tick fails it",
    o: (o) => {
      unsettled(o);
      ann(o, "refresh-skip-streak", "7.0");
    },
    want: { outcome: "error", reason: "skip_streak_untrusted", actions: [] },
  },
  {
    name: "unsettled still reports a lockout",
    o: (o) => {
      unsettled(o);
      ann(o, "refresh-attempt", "3");
    },
    want: { outcome: "skipped", after: { attemptCount: 3, skipStreak: 1, lockedOut: true, frozen: false } },
  },
];
for (const raw of ["", "abc", "-1", "+1", "1e3", " 2", "2 ", "2a", "1.0", "0x1", "1234567890"]) {
  cases.push({
    name: `untrusted attempt ${JSON.stringify(raw)} holds the refresh`,
    o: (o) => {
      newApi(o);
      ann(o, "refresh-attempt", raw);
    },
    want: {
      outcome: "held",
      reason: "attempt_untrusted",
      actions: [],
      after: { attemptCount: undefined, skipStreak: 0, lockedOut: false, frozen: false },
    },
  });
}

describe("plan", () => {
  for (const tc of cases) {
    test(tc.name, () => {
      const d = plan(observed(tc.o), config(tc.c));
      expect(d).toMatchObject(tc.want as object);
      if (tc.want.actions) expect(d.actions).toEqual(tc.want.actions as Decision["actions"]);
    });
  }

  test("lockout actions: marker with the count, then a Warning Event saying how to re-arm", () => {
    const d = plan(
      observed((o) => {
        newApi(o);
        ann(o, "refresh-attempt", "3");
      }),
      config(),
    );
    expect(d.actions.map((a) => a.type)).toEqual(["mark-flap", "event"]);
    expect(d.actions[0]).toEqual({ type: "mark-flap", count: 3 });
    expect(d.actions[1]).toMatchObject({ eventType: "Warning", reason: "RefreshLockedOut" });
    expect(d.message).toContain("image-refresh rearm");
  });

  test("the freeze message names every target workload", () => {
    const d = plan(
      observed((o) => {
        unsettled(o);
        ann(o, "refresh-skip-streak", "7");
      }),
      config(),
    );
    for (const w of ["Deployment apps/api", "Deployment apps/api-proxy", "DaemonSet agents/node-agent"])
      expect(d.message).toContain(w);
    expect(d.actions).toEqual([
      { type: "write-streak", value: 8 },
      { type: "event", eventType: "Warning", reason: "RefreshFrozen", note: d.message },
    ]);
  });

  test("two containers of one workload go in one rollout; workloads follow config order", () => {
    const c = config((c) => {
      c.images[1].targets.push({ kind: "Deployment", name: "api-proxy", container: "agent" });
      c.images[0].targets.push({ kind: "Deployment", name: "api", container: "sidecar" });
    });
    const o = observed((o) => {
      newApi(o);
      o.digests = { ...o.digests, "node-agent": { ok: true, digest: D("e") } };
      o.workloads!["Deployment/apps/api-proxy"] = { found: true, images: { proxy: "p", agent: "a" } };
    });
    const rolls = plan(o, c).actions.filter((a) => a.type === "rollout");
    expect(
      rolls.map((r) =>
        r.type === "rollout" ? [r.workload.name, r.containers.map((x) => x.name), r.images] : [],
      ),
    ).toEqual([
      ["api", ["api", "sidecar"], ["api"]],
      ["api-proxy", ["proxy", "agent"], ["api", "node-agent"]],
      ["node-agent", ["agent"], ["node-agent"]],
    ]);
  });

  test("the pinned reference uses the configured host and repository", () => {
    const c = config((c) => (c.registry = { host: "registry.example.com:5000" }));
    const d = plan(observed(newApi), c);
    expect(d.actions[1]).toMatchObject({
      containers: [{ image: `registry.example.com:5000/myorg/api@${D("c")}` }],
    });
  });
});

describe("needsTargets / targetsToRead", () => {
  test("targets are read only when a refresh could start", () => {
    expect(needsTargets(observed(), config())).toBe(false);
    expect(needsTargets(observed(newApi), config())).toBe(true);
    expect(
      needsTargets(
        observed((o) => {
          newApi(o);
          ann(o, "refresh-attempt", "3");
        }),
        config(),
      ),
    ).toBe(false);
    expect(
      needsTargets(
        observed((o) => {
          newApi(o);
          ann(o, "refresh-attempt", "x");
        }),
        config(),
      ),
    ).toBe(false);
    expect(targetsToRead(observed(newApi), config()).map((r) => r.name)).toEqual(["api", "api-proxy"]);
  });
});
