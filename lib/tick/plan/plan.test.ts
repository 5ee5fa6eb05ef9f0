// plan(): whole decisions, one table. A base world (the documented example: api on two Deployments,
// node-agent on a DaemonSet, both recorded and in sync), one tweak per case, the outcome, every
// image's verdict and every action compared whole.
import { describe, expect, test } from "bun:test";
import {
  AGENT_E,
  API_C,
  agentFails,
  ann,
  both,
  type Case,
  config,
  D,
  newAgent,
  newApi,
  observed,
  P,
  REFRESH_API,
  roll,
  runCases,
  shareProxy,
  unsettled,
  write,
} from "../../../tests/support/plan-tables.ts";
import { plan, targetsToRead } from "./plan.ts";

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
  // The live spec of the targets: plan.live.test.ts; here only what a rollout needs of them.
  {
    name: "a target whose rollout cannot start (OnDelete) holds only a due refresh",
    o: (o) => {
      o.workloads!["DaemonSet/agents/node-agent"] = {
        found: true,
        images: { agent: `docker.io/myorg/node-agent@${D("b")}` },
        blocked: "rollout status is only available for RollingUpdate strategy type",
      };
    },
    outcome: "noop",
    actions: [],
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

describe("plan", () => {
  runCases(cases);

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
    const o = observed(newApi);
    for (const w of Object.values(o.workloads ?? {}))
      if (w.found)
        for (const [n, i] of Object.entries(w.images))
          w.images[n] = i.replace("docker.io/", "registry.example.com:5000/");
    const d = plan(o, c);
    expect(d.actions[1]).toMatchObject({
      containers: [{ image: `registry.example.com:5000/myorg/api@${D("c")}` }],
    });
  });

  test("in sync: every target pinned to the recorded digest; a floating tag or another digest is not", () => {
    const pinned = observed((o) => {
      o.workloads = {
        "Deployment/apps/api": {
          found: true,
          images: { api: `docker.io/myorg/api@${D("a")}`, sidecar: "envoy" },
        },
        "Deployment/apps/api-proxy": {
          found: true,
          images: { proxy: `docker.io/myorg/api:stable@${D("a")}` },
        },
        "DaemonSet/agents/node-agent": {
          found: true,
          images: { agent: `docker.io/myorg/node-agent@${D("b")}` },
        },
      };
    });
    expect(plan(pinned, config()).images.map((v) => [v.key, v.inSync])).toEqual([
      ["api", true],
      ["node-agent", true],
    ]);
    const floating = observed((o) => {
      for (const w of Object.values(o.workloads ?? {}))
        if (w.found) for (const [n, i] of Object.entries(w.images)) w.images[n] = i.replace(/@.*/, ":stable");
    });
    expect(plan(floating, config()).images.map((v) => v.inSync)).toEqual([false, false]);
    const other = observed((o) => {
      o.workloads!["Deployment/apps/api"] = { found: true, images: { api: `docker.io/myorg/api@${D("c")}` } };
    });
    expect(plan(other, config()).images[0]?.inSync).toBe(false);
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
  test("every target of every image that is not pinned, each workload once, on every settled tick", () => {
    const all = ["api", "api-proxy", "node-agent"];
    expect(targetsToRead(observed(), config()).map((r) => r.name)).toEqual(all);
    expect(targetsToRead(observed(newApi), config()).map((r) => r.name)).toEqual(all);
    const pinned = config((c) => (c.images[0].pinned = true));
    expect(targetsToRead(observed(), pinned).map((r) => r.name)).toEqual(["node-agent"]);
    expect(targetsToRead(observed(), config(shareProxy)).map((r) => r.name)).toEqual(all);
  });
});
