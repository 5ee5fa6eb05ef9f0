// plan(): whole decisions, one table. A base world (SPEC's example: api on two Deployments,
// node-agent on a DaemonSet, both recorded and in sync), one tweak per case, the outcome, every
// image's verdict and every action compared whole.
import { describe, expect, test } from "bun:test";
import { type Config, parseConfig } from "../config.ts";
import { exampleConfig } from "../example-config.ts";
import type { Action, Decision, Observed } from "./model.ts";
import { plan, targetsToRead } from "./plan.ts";

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
      "Deployment/apps/api-proxy": {
        found: true,
        images: { proxy: "docker.io/myorg/api:stable", agent: "x" },
      },
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
const newAgent = (o: Observed) => {
  o.digests = { ...o.digests, "node-agent": { ok: true, digest: D("e") } };
};
const agentFails =
  (failure = "not_found") =>
  (o: Observed) => {
    o.digests = { ...o.digests, "node-agent": { ok: false, failure, message: "manifest HEAD answered 404" } };
  };
const unsettled = (o: Observed) => {
  o.state.settled = false;
  o.state.settleMessage = "Waiting for deployment spec update to be observed...";
  delete o.digests;
  delete o.workloads;
};
const both =
  (...fs: Array<(o: Observed) => void>) =>
  (o: Observed) => {
    for (const f of fs) f(o);
  };
/** node-agent also runs in Deployment api-proxy: the two images share a workload. */
const shareProxy = (c: any) =>
  c.images[1].targets.push({ kind: "Deployment", name: "api-proxy", container: "agent" });

const write = (w: Partial<Extract<Action, { type: "write-state" }>>): Action => ({
  type: "write-state",
  annotations: {},
  attempts: {},
  streaks: [],
  flaps: [],
  firstSeen: [],
  ...w,
});
const roll = (name: string, containers: Array<[string, string]>, images: string[], group = 0): Action => ({
  type: "rollout",
  workload:
    name === "node-agent"
      ? { kind: "DaemonSet", namespace: "agents", name }
      : { kind: "Deployment", namespace: "apps", name },
  containers: containers.map(([n, image]) => ({ name: n, image })),
  images,
  group,
});
const API_C = `docker.io/myorg/api@${D("c")}`;
const AGENT_E = `docker.io/myorg/node-agent@${D("e")}`;
const REFRESH_API: Action[] = [
  write({ attempts: { api: 1 } }),
  roll("api", [["api", API_C]], ["api"]),
  roll("api-proxy", [["proxy", API_C]], ["api"]),
  { type: "reset", counts: { api: 1 } },
  { type: "record-digests", digests: { api: D("c") } },
];

type Case = {
  name: string;
  o?: (o: Observed) => void;
  c?: (c: any) => void;
  outcome: Decision["outcome"];
  reason?: Decision["reason"];
  /** Each image's verdict as `outcome/reason`. */
  images?: Record<string, string>;
  actions: Action[];
};

const cases: Case[] = [
  {
    name: "healthy and unchanged writes nothing",
    outcome: "noop",
    reason: "unchanged",
    images: { api: "noop/unchanged", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a recorded skip streak is cleared on a settled tick",
    o: (o) => ann(o, "refresh-skip-streak", "3"),
    outcome: "noop",
    actions: [{ type: "clear-streak" }],
  },
  {
    name: "an untrusted skip streak is cleared like any streak when settled",
    o: (o) => ann(o, "refresh-skip-streak", "x"),
    outcome: "noop",
    actions: [{ type: "clear-streak" }],
  },
  {
    name: "first observation records and touches no workload",
    o: (o) => ann(o, "last-refreshed-node-agent-digest", undefined),
    outcome: "recorded",
    reason: "first_observation",
    images: { api: "noop/unchanged", "node-agent": "recorded/first_observation" },
    actions: [{ type: "record-digests", digests: { "node-agent": D("b") } }],
  },
  {
    name: "a pinned image is never refreshed",
    c: (c) => (c.images[0].pinned = true),
    o: newApi,
    outcome: "noop",
    images: { api: "noop/pinned", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a changed digest persists attempt 1, rolls each workload, resets, records",
    o: newApi,
    outcome: "refreshed",
    reason: "digest_changed",
    images: { api: "refreshed/digest_changed", "node-agent": "noop/unchanged" },
    actions: REFRESH_API,
  },
  {
    name: "the skip streak is cleared before the attempt is persisted",
    o: both(newApi, (o) => ann(o, "refresh-skip-streak", "2")),
    outcome: "refreshed",
    actions: [{ type: "clear-streak" }, ...REFRESH_API],
  },
  {
    name: "attempt 2 becomes 3",
    o: both(newApi, (o) => ann(o, "refresh-attempt-api", "2")),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 3 } }),
      roll("api", [["api", API_C]], ["api"]),
      roll("api-proxy", [["proxy", API_C]], ["api"]),
      { type: "reset", counts: { api: 3 } },
      { type: "record-digests", digests: { api: D("c") } },
    ],
  },
  {
    name: "a count at the maximum locks the image out and marks the flap once",
    o: both(newApi, (o) => ann(o, "refresh-attempt-api", "3")),
    outcome: "locked_out",
    reason: "flap_lockout",
    images: { api: "locked_out/flap_lockout", "node-agent": "noop/unchanged" },
    actions: [
      write({ annotations: { [`${P}/refresh-flap-detected-api`]: "3" }, flaps: ["api"] }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshLockedOut",
        note: expect.stringContaining("image-refresh rearm api") as unknown as string,
        image: "api",
      },
    ],
  },
  {
    name: "a held lockout writes nothing more",
    o: both(
      newApi,
      (o) => ann(o, "refresh-attempt-api", "3"),
      (o) => ann(o, "refresh-flap-detected-api", "3"),
    ),
    outcome: "locked_out",
    actions: [],
  },
  {
    name: "raising maxRefreshAttempts above the count lifts the lockout",
    c: (c) => (c.maxRefreshAttempts = 5),
    o: both(
      newApi,
      (o) => ann(o, "refresh-attempt-api", "3"),
      (o) => ann(o, "refresh-flap-detected-api", "3"),
    ),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 4 } }),
      roll("api", [["api", API_C]], ["api"]),
      roll("api-proxy", [["proxy", API_C]], ["api"]),
      { type: "reset", counts: { api: 4 } },
      { type: "record-digests", digests: { api: D("c") } },
    ],
  },
  {
    name: "a missing container holds the refresh of that image",
    o: both(newApi, (o) => {
      o.workloads!["Deployment/apps/api-proxy"] = { found: true, images: { other: "x" } };
    }),
    outcome: "held",
    reason: "target_unavailable",
    actions: [],
  },
  {
    name: "an unreadable target holds the refresh of that image",
    o: both(newApi, (o) => {
      o.workloads!["Deployment/apps/api"] = { found: false, message: "Forbidden (403)" };
    }),
    outcome: "held",
    reason: "target_unavailable",
    actions: [],
  },
  {
    name: "another tick claimed the image's attempt: it stands down",
    o: both(newApi, (o) => {
      o.claimed = ["api"];
    }),
    outcome: "held",
    reason: "attempt_claimed",
    actions: [],
  },
  // Unresolved is never noop.
  {
    name: "an unresolved image counts its streak and is unresolved, not noop",
    o: agentFails(),
    outcome: "unresolved",
    reason: "unresolved",
    images: { api: "noop/unchanged", "node-agent": "unresolved/unresolved" },
    actions: [
      write({ annotations: { [`${P}/unresolved-streak-node-agent`]: "1" }, streaks: ["node-agent"] }),
    ],
  },
  {
    name: "every image refused (a broken pull secret) is unresolved, never noop",
    o: both(agentFails("unauthorized"), (o) => {
      o.digests = { ...o.digests, api: { ok: false, failure: "unauthorized", message: "401" } };
    }),
    outcome: "unresolved",
    images: { api: "unresolved/unresolved", "node-agent": "unresolved/unresolved" },
    actions: [
      write({
        annotations: { [`${P}/unresolved-streak-api`]: "1", [`${P}/unresolved-streak-node-agent`]: "1" },
        streaks: ["api", "node-agent"],
      }),
    ],
  },
  {
    name: "reaching maxUnresolvedTicks makes the image stale with one Warning Event",
    o: both(agentFails(), (o) => ann(o, "unresolved-streak-node-agent", "7")),
    outcome: "stale",
    reason: "unresolved_ceiling",
    actions: [
      write({ annotations: { [`${P}/unresolved-streak-node-agent`]: "8" }, streaks: ["node-agent"] }),
      {
        type: "event",
        eventType: "Warning",
        reason: "ImageStale",
        note: expect.stringContaining("STALE") as unknown as string,
        image: "node-agent",
      },
    ],
  },
  {
    name: "past the ceiling the image stays stale without another Event",
    o: both(agentFails(), (o) => ann(o, "unresolved-streak-node-agent", "8")),
    outcome: "stale",
    actions: [
      write({ annotations: { [`${P}/unresolved-streak-node-agent`]: "9" }, streaks: ["node-agent"] }),
    ],
  },
  {
    name: "an untrusted unresolved streak that must be counted fails the tick",
    o: both(agentFails(), (o) => ann(o, "unresolved-streak-node-agent", "x")),
    outcome: "error",
    reason: "unresolved_streak_untrusted",
    actions: [],
  },
  {
    name: "a resolved image's streak is removed (an untrusted one too)",
    o: (o) => ann(o, "unresolved-streak-node-agent", "x"),
    outcome: "noop",
    actions: [write({ annotations: { [`${P}/unresolved-streak-node-agent`]: null } })],
  },
  // Isolation.
  {
    name: "a locked-out image does not hold back an unrelated image's refresh",
    o: both(
      newApi,
      newAgent,
      (o) => ann(o, "refresh-attempt-node-agent", "3"),
      (o) => ann(o, "refresh-flap-detected-node-agent", "3"),
    ),
    outcome: "locked_out",
    images: { api: "refreshed/digest_changed", "node-agent": "locked_out/flap_lockout" },
    actions: REFRESH_API,
  },
  {
    name: "an unresolved image and a refresh share one write before any rollout",
    o: both(newApi, agentFails()),
    outcome: "unresolved",
    images: { api: "refreshed/digest_changed", "node-agent": "unresolved/unresolved" },
    actions: [
      write({
        annotations: { [`${P}/unresolved-streak-node-agent`]: "1" },
        attempts: { api: 1 },
        streaks: ["node-agent"],
      }),
      ...REFRESH_API.slice(1),
    ],
  },
  {
    name: "images that share a workload move together: one group, one patch for the shared workload",
    c: shareProxy,
    o: both(newApi, newAgent),
    outcome: "refreshed",
    actions: [
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
    ],
  },
  {
    name: "disjoint images are separate groups",
    o: both(newApi, newAgent),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 1, "node-agent": 1 } }),
      roll("api", [["api", API_C]], ["api"], 0),
      roll("api-proxy", [["proxy", API_C]], ["api"], 0),
      roll("node-agent", [["agent", AGENT_E]], ["node-agent"], 1),
      { type: "reset", counts: { api: 1, "node-agent": 1 } },
      { type: "record-digests", digests: { api: D("c"), "node-agent": D("e") } },
    ],
  },
  {
    name: "a workload that carries a locked-out image is patched for no image",
    c: shareProxy,
    o: both(newApi, (o) => ann(o, "refresh-attempt-node-agent", "3")),
    outcome: "locked_out",
    reason: "shared_workload",
    images: { api: "locked_out/shared_workload", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a workload that carries an image with an untrusted count is patched for no image",
    c: shareProxy,
    o: both(newApi, (o) => ann(o, "refresh-attempt-node-agent", "two")),
    outcome: "held",
    reason: "shared_workload",
    actions: [],
  },
  // Legacy keys.
  {
    name: "legacy refresh-attempt=3 locks out every image; the flap markers migrate",
    o: both(newApi, newAgent, (o) => ann(o, "refresh-attempt", "3")),
    outcome: "locked_out",
    images: { api: "locked_out/flap_lockout", "node-agent": "locked_out/flap_lockout" },
    actions: [
      write({
        annotations: {
          [`${P}/refresh-flap-detected-api`]: "3",
          [`${P}/refresh-flap-detected-node-agent`]: "3",
          [`${P}/refresh-attempt-api`]: "3",
          [`${P}/refresh-attempt-node-agent`]: "3",
          [`${P}/refresh-attempt`]: null,
        },
        flaps: ["api", "node-agent"],
      }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshLockedOut",
        note: expect.any(String) as unknown as string,
        image: "api",
      },
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshLockedOut",
        note: expect.any(String) as unknown as string,
        image: "node-agent",
      },
    ],
  },
  {
    name: "legacy keys with their flap marker hold every image without a write",
    o: both(
      newApi,
      (o) => ann(o, "refresh-attempt", "3"),
      (o) => ann(o, "refresh-flap-detected", "3"),
    ),
    outcome: "locked_out",
    actions: [],
  },
  {
    name: "the first counter write migrates the legacy count to every image in the same patch",
    o: both(
      newApi,
      (o) => ann(o, "refresh-attempt", "1"),
      (o) => ann(o, "refresh-attempt-traceparent", "00-x"),
    ),
    outcome: "refreshed",
    actions: [
      write({
        annotations: {
          [`${P}/refresh-attempt-node-agent`]: "1",
          [`${P}/refresh-attempt-traceparent-node-agent`]: "00-x",
          [`${P}/refresh-attempt`]: null,
          [`${P}/refresh-attempt-traceparent`]: null,
        },
        attempts: { api: 2 },
      }),
      ...REFRESH_API.slice(1, 3),
      { type: "reset", counts: { api: 2 } },
      { type: "record-digests", digests: { api: D("c") } },
    ],
  },
  {
    name: "legacy keys under another prefix count too",
    o: both(newApi, (o) => {
      o.state.annotations["tracebloc.io/refresh-attempt"] = "3";
      o.state.annotations["tracebloc.io/refresh-flap-detected"] = "3";
    }),
    outcome: "locked_out",
    actions: [],
  },
  // Rejected builds.
  {
    name: "a rejected build is never rolled out: paused, and the other image goes on",
    o: both(newApi, newAgent, (o) => ann(o, "rejected-node-agent-digest", D("e"))),
    outcome: "paused",
    images: { api: "refreshed/digest_changed", "node-agent": "paused/build_rejected" },
    actions: REFRESH_API,
  },
  {
    name: "the build after a rejected one rolls out",
    o: both(newAgent, (o) => ann(o, "rejected-node-agent-digest", D("d"))),
    outcome: "refreshed",
    actions: [
      write({ attempts: { "node-agent": 1 } }),
      roll("node-agent", [["agent", AGENT_E]], ["node-agent"]),
      { type: "reset", counts: { "node-agent": 1 } },
      { type: "record-digests", digests: { "node-agent": D("e") } },
    ],
  },
  // The registry's quota.
  {
    name: "a 429's Retry-After rides with the streaks in the one write",
    o: both(agentFails("rate_limited"), (o) => {
      o.registry = { held: false, retryAfter: "2026-12-01T12:00:00.000Z" };
    }),
    outcome: "unresolved",
    actions: [
      write({
        annotations: {
          [`${P}/registry-retry-after`]: "2026-12-01T12:00:00.000Z",
          [`${P}/unresolved-streak-node-agent`]: "1",
        },
        streaks: ["node-agent"],
      }),
    ],
  },
  {
    name: "a stored Retry-After still in force is kept",
    o: both(agentFails("rate_limited"), (o) => {
      o.registry = { held: true };
      ann(o, "registry-retry-after", "2026-12-01T12:00:00.000Z");
    }),
    outcome: "unresolved",
    actions: [
      write({ annotations: { [`${P}/unresolved-streak-node-agent`]: "1" }, streaks: ["node-agent"] }),
    ],
  },
  {
    name: "a stored Retry-After is removed once the registry was called again",
    o: (o) => {
      o.registry = { held: false };
      ann(o, "registry-retry-after", "2026-12-01T11:00:00.000Z");
    },
    outcome: "noop",
    actions: [write({ annotations: { [`${P}/registry-retry-after`]: null } })],
  },
  // Unsettled.
  {
    name: "unsettled with no streak skips tick 1",
    o: unsettled,
    outcome: "skipped",
    reason: "not_settled",
    images: {},
    actions: [{ type: "write-streak", value: 1 }],
  },
  {
    name: "unsettled below the ceiling skips",
    o: both(unsettled, (o) => ann(o, "refresh-skip-streak", "1")),
    outcome: "skipped",
    actions: [{ type: "write-streak", value: 2 }],
  },
  {
    name: "unsettled past the ceiling stays frozen without another Event",
    o: both(unsettled, (o) => ann(o, "refresh-skip-streak", "8")),
    outcome: "frozen",
    reason: "skip_ceiling",
    actions: [{ type: "write-streak", value: 9 }],
  },
  {
    name: "an untrusted streak on an unsettled tick fails it",
    o: both(unsettled, (o) => ann(o, "refresh-skip-streak", "x")),
    outcome: "error",
    reason: "skip_streak_untrusted",
    actions: [],
  },
];
for (const raw of ["", "abc", "-1", "+1", "1e3", " 2", "2 ", "2a", "1.0", "0x1", "1234567890"]) {
  cases.push({
    name: `untrusted attempt ${JSON.stringify(raw)} holds that image's refresh`,
    o: both(newApi, (o) => ann(o, "refresh-attempt-api", raw)),
    outcome: "held",
    reason: "attempt_untrusted",
    images: { api: "held/attempt_untrusted", "node-agent": "noop/unchanged" },
    actions: [],
  });
}

const verdicts = (d: Decision) =>
  Object.fromEntries(d.images.map((v) => [v.key, `${v.outcome}/${v.reason}`]));

describe("plan", () => {
  for (const tc of cases) {
    test(tc.name, () => {
      const d = plan(observed(tc.o), config(tc.c));
      expect(d.outcome).toBe(tc.outcome);
      if (tc.reason) expect(d.reason).toBe(tc.reason);
      if (tc.images) expect(verdicts(d)).toEqual(tc.images);
      expect(d.actions).toEqual(tc.actions);
    });
  }

  test("the freeze message names every target workload and posts one Event", () => {
    const d = plan(observed(both(unsettled, (o) => ann(o, "refresh-skip-streak", "7"))), config());
    for (const w of ["Deployment apps/api", "Deployment apps/api-proxy", "DaemonSet agents/node-agent"])
      expect(d.message).toContain(w);
    expect(d.actions).toEqual([
      { type: "write-streak", value: 8 },
      { type: "event", eventType: "Warning", reason: "RefreshFrozen", note: d.message },
    ]);
  });

  test("the tick's line lists every image's verdict with its detail", () => {
    const o = observed(both(newApi, agentFails("unauthorized")));
    expect(plan(o, config()).message).toBe("api: refreshed; node-agent: unresolved 1/8 (unauthorized)");
    const locked = observed(both(newAgent, (o) => ann(o, "refresh-attempt-node-agent", "3")));
    expect(plan(locked, config()).message).toBe("api: noop; node-agent: locked_out 3/3");
  });

  test("a lockout's message says how to re-arm or reject that image", () => {
    const d = plan(observed(both(newApi, (o) => ann(o, "refresh-attempt-api", "3"))), config());
    expect(d.images[0]?.message).toContain("image-refresh rearm api");
    expect(d.images[0]?.message).toContain("image-refresh reject api");
  });

  test("the pinned reference uses the configured host and repository", () => {
    const c = config((c) => (c.registry = { host: "registry.example.com:5000" }));
    const d = plan(observed(newApi), c);
    expect(d.actions[1]).toMatchObject({
      containers: [{ image: `registry.example.com:5000/myorg/api@${D("c")}` }],
    });
  });

  test("gauges: counts as the tick leaves them, no value for an untrusted count", () => {
    const d = plan(observed(both(newApi, (o) => ann(o, "refresh-attempt-node-agent", "x"))), config());
    expect(d.images.map((v) => [v.key, v.attemptCount, v.lockedOut])).toEqual([
      ["api", 0, false],
      ["node-agent", undefined, undefined],
    ]);
    const stale = plan(
      observed(both(agentFails(), (o) => ann(o, "unresolved-streak-node-agent", "7"))),
      config(),
    );
    expect(stale.images[1]?.unresolvedStreak).toBe(8);
    expect(plan(observed(), config()).images.every((v) => v.verified)).toBe(true);
  });
});

describe("targetsToRead", () => {
  test("the targets of due images only; none for a locked-out or untrusted image", () => {
    expect(targetsToRead(observed(), config())).toEqual([]);
    expect(targetsToRead(observed(newApi), config()).map((r) => r.name)).toEqual(["api", "api-proxy"]);
    expect(
      targetsToRead(observed(both(newApi, (o) => ann(o, "refresh-attempt-api", "3"))), config()),
    ).toEqual([]);
    expect(
      targetsToRead(observed(both(newApi, (o) => ann(o, "refresh-attempt-api", "x"))), config()),
    ).toEqual([]);
    expect(targetsToRead(observed(both(newApi, newAgent)), config()).map((r) => r.name)).toEqual([
      "api",
      "api-proxy",
      "node-agent",
    ]);
  });
});
