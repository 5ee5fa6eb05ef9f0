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
  REFRESH_AGENT,
  REFRESH_API,
  REFRESH_BOTH,
  REFRESH_BOTH_SHARED,
  roll,
  runCases,
  shareProxy,
  unsettled,
  write,
} from "../../../tests/support/plan-tables.ts";
import { plan } from "./plan.ts";

const cases: Case[] = [
  {
    name: "healthy and unchanged writes nothing",
    outcome: "noop",
    reason: "unchanged",
    images: { api: "noop/unchanged", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a recorded skip streak is removed on a tick that finds the image's targets settled",
    o: (o) => ann(o, "skip-streak-api", "3"),
    outcome: "noop",
    actions: [write({ change: { "skip-streak-api": null } })],
  },
  {
    name: "an untrusted skip streak is removed like any streak when settled",
    o: (o) => ann(o, "skip-streak-api", "x"),
    outcome: "noop",
    actions: [write({ change: { "skip-streak-api": null } })],
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
    name: "the skip streak's removal rides with the attempt",
    o: both(newApi, (o) => ann(o, "skip-streak-api", "2")),
    outcome: "refreshed",
    actions: [write({ change: { "skip-streak-api": null }, attempts: { api: 1 } }), ...REFRESH_API.slice(1)],
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
      write({ change: { [`refresh-flap-detected-api`]: "3" }, flaps: ["api"] }),
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
      o.workloads!["Deployment/apps/api-proxy"] = {
        found: true,
        settled: true,
        settleMessage: "",
        images: { other: "x" },
      };
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
    actions: [write({ change: { [`unresolved-streak-node-agent`]: "1" }, streaks: ["node-agent"] })],
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
        change: { [`unresolved-streak-api`]: "1", [`unresolved-streak-node-agent`]: "1" },
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
      write({ change: { [`unresolved-streak-node-agent`]: "8" }, streaks: ["node-agent"] }),
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
    actions: [write({ change: { [`unresolved-streak-node-agent`]: "9" }, streaks: ["node-agent"] })],
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
    actions: [write({ change: { [`unresolved-streak-node-agent`]: null } })],
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
        change: { [`unresolved-streak-node-agent`]: "1" },
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
    actions: REFRESH_BOTH_SHARED,
  },
  {
    name: "disjoint images are separate groups",
    o: both(newApi, newAgent),
    outcome: "refreshed",
    actions: REFRESH_BOTH,
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
    name: "a lockout carried over from the legacy annotations (in the book observe built) holds",
    o: both(newApi, (o) => {
      ann(o, "refresh-attempt-api", "3");
      ann(o, "refresh-flap-detected-api", "3");
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
    actions: REFRESH_AGENT,
  },
  // The live spec of the targets: plan.live.test.ts; here only what a rollout needs of them.
  {
    name: "a target whose rollout cannot start (OnDelete) holds only a due refresh",
    o: (o) => {
      o.workloads!["DaemonSet/agents/node-agent"] = {
        found: true,
        settled: true,
        settleMessage: "",
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
      o.registries = { "docker.io": { held: false, retryAfter: Date.parse("2026-12-01T12:00:00Z") } };
    }),
    outcome: "unresolved",
    actions: [
      write({
        change: {
          [`registry-retry-after-docker.io`]: "2026-12-01T12:00:00Z",
          [`unresolved-streak-node-agent`]: "1",
        },
        streaks: ["node-agent"],
      }),
    ],
  },
  {
    name: "a stored Retry-After still in force is kept",
    o: both(agentFails("rate_limited"), (o) => {
      o.registries = { "docker.io": { held: true } };
      ann(o, "registry-retry-after-docker.io", "2026-12-01T12:00:00.000Z");
    }),
    outcome: "unresolved",
    actions: [write({ change: { [`unresolved-streak-node-agent`]: "1" }, streaks: ["node-agent"] })],
  },
  {
    name: "a stored Retry-After is removed once the registry was called again",
    o: (o) => {
      o.registries = { "docker.io": { held: false } };
      ann(o, "registry-retry-after-docker.io", "2026-12-01T11:00:00.000Z");
    },
    outcome: "noop",
    actions: [write({ change: { [`registry-retry-after-docker.io`]: null } })],
  },
  // The registry's answer to its API root, remembered for the next tick.
  {
    name: "a first answer learned on a no-op tick is not a write of its own",
    o: (o) => {
      o.registries = { "docker.io": { held: false, remember: "https://r.example open" } };
    },
    outcome: "noop",
    actions: [],
  },
  {
    name: "a first answer rides with a write the tick makes anyway",
    o: both(agentFails("server_error"), (o) => {
      o.registries = { "docker.io": { held: false, remember: "https://r.example open" } };
    }),
    outcome: "unresolved",
    actions: [
      write({
        change: {
          "unresolved-streak-node-agent": "1",
          "registry-challenge-docker.io": "https://r.example open",
        },
        streaks: ["node-agent"],
      }),
    ],
  },
  {
    name: "a stored answer that did not hold is replaced at once",
    o: (o) => {
      o.registries = {
        "docker.io": { held: false, remember: 'https://r.example Bearer realm="https://r.example/new"' },
      };
      ann(o, "registry-challenge-docker.io", 'https://r.example Bearer realm="https://r.example/old"');
    },
    outcome: "noop",
    actions: [
      write({
        change: { "registry-challenge-docker.io": 'https://r.example Bearer realm="https://r.example/new"' },
      }),
    ],
  },
  {
    name: "a stored answer the registry overruled is removed",
    o: (o) => {
      o.registries = { "docker.io": { held: false, remember: null } };
      ann(o, "registry-challenge-docker.io", "https://r.example open");
    },
    outcome: "noop",
    actions: [write({ change: { "registry-challenge-docker.io": null } })],
  },
  {
    name: "the same answer again, or nothing learned, writes nothing",
    o: (o) => {
      o.registries = { "docker.io": { held: false, remember: "https://r.example open" } };
      ann(o, "registry-challenge-docker.io", "https://r.example open");
    },
    outcome: "noop",
    actions: [],
  },
  // The settled guard, per image: Deployment apps/api (a target of api) is not settled.
  {
    name: "an image with an unsettled target skips tick 1; the other image goes on",
    o: unsettled,
    outcome: "skipped",
    reason: "not_settled",
    images: { api: "skipped/not_settled", "node-agent": "noop/unchanged" },
    actions: [write({ change: { "skip-streak-api": "1" }, streaks: ["api"] })],
  },
  {
    name: "a DaemonSet image refreshes while the Deployment image waits for its workload",
    o: both(unsettled, newAgent),
    outcome: "skipped",
    images: { api: "skipped/not_settled", "node-agent": "refreshed/digest_changed" },
    actions: [
      write({ change: { "skip-streak-api": "1" }, streaks: ["api"], attempts: { "node-agent": 1 } }),
      roll("node-agent", [["agent", AGENT_E]], ["node-agent"]),
      { type: "reset", counts: { "node-agent": 1 } },
      { type: "record-digests", digests: { "node-agent": D("e") } },
    ],
  },
  {
    name: "an image sharing the unsettled workload waits with it",
    c: shareProxy,
    o: both(newAgent, (o) => {
      const w = o.workloads?.["Deployment/apps/api-proxy"];
      if (w?.found)
        Object.assign(w, { settled: false, settleMessage: "1 old replicas are pending termination..." });
    }),
    outcome: "skipped",
    images: { api: "skipped/not_settled", "node-agent": "skipped/not_settled" },
    actions: [
      write({
        change: { "skip-streak-api": "1", "skip-streak-node-agent": "1" },
        streaks: ["api", "node-agent"],
      }),
    ],
  },
  {
    name: "unsettled below the ceiling skips",
    o: both(unsettled, (o) => ann(o, "skip-streak-api", "1")),
    outcome: "skipped",
    actions: [write({ change: { "skip-streak-api": "2" }, streaks: ["api"] })],
  },
  {
    name: "reaching the ceiling freezes the image, with one Event about the workload that does not settle",
    o: both(unsettled, (o) => ann(o, "skip-streak-api", "7")),
    outcome: "frozen",
    reason: "skip_ceiling",
    images: { api: "frozen/skip_ceiling", "node-agent": "noop/unchanged" },
    actions: [
      write({ change: { "skip-streak-api": "8" }, streaks: ["api"] }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshFrozen",
        note: "FROZEN: api: Deployment apps/api not settled (Waiting for deployment spec update to be observed...) for 8 ticks in a row (max 8); no refresh of api until it settles",
        image: "api",
        regarding: [{ kind: "Deployment", namespace: "apps", name: "api" }],
      },
    ],
  },
  {
    name: "unsettled past the ceiling stays frozen without another Event",
    o: both(unsettled, (o) => ann(o, "skip-streak-api", "8")),
    outcome: "frozen",
    reason: "skip_ceiling",
    actions: [write({ change: { "skip-streak-api": "9" }, streaks: ["api"] })],
  },
  {
    name: "an untrusted streak on an unsettled tick fails it",
    o: both(unsettled, (o) => ann(o, "skip-streak-api", "x")),
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

  test("a streak past its ceiling is shown at its max: frozen 8/8 and stale 8/8, never 9/8", () => {
    const frozen = observed(both(unsettled, (o) => ann(o, "skip-streak-api", "8")));
    expect(plan(frozen, config()).message).toBe("api: frozen 8/8; node-agent: noop");
    const stale = observed(
      both(agentFails("unauthorized"), (o) => ann(o, "unresolved-streak-node-agent", "8")),
    );
    expect(plan(stale, config()).message).toBe("api: noop; node-agent: stale 8/8 (unauthorized)");
  });

  test("the tick's line lists every image's verdict with its detail", () => {
    const o = observed(both(newApi, agentFails("unauthorized")));
    expect(plan(o, config()).message).toBe("api: refreshed; node-agent: unresolved 1/8 (unauthorized)");
    const locked = observed(both(newAgent, (o) => ann(o, "refresh-attempt-node-agent", "3")));
    expect(plan(locked, config()).message).toBe("api: noop; node-agent: locked_out 3/3");
  });

  test("a lockout's message tells the failed build from a newer one, with the command for each", () => {
    const same = plan(
      observed(
        both(
          newApi,
          (o) => ann(o, "refresh-attempt-api", "3"),
          (o) => ann(o, "failed-api-digest", D("c")),
        ),
      ),
      config(),
    );
    expect(same.images[0]?.message).toContain(`the last of build ${D("c")}`);
    expect(same.images[0]?.message).toContain("`image-refresh rearm api` to try this build again");
    expect(same.images[0]?.message).toContain("`image-refresh reject api` to wait for the next one");
    const newer = plan(
      observed(
        both(
          newApi,
          (o) => ann(o, "refresh-attempt-api", "3"),
          (o) => ann(o, "failed-api-digest", D("9")),
        ),
      ),
      config(),
    );
    const m = newer.images[0]?.message ?? "";
    expect(m).toContain(`the last of build ${D("9")}; the registry now has a newer build ${D("c")}`);
    expect(m).toContain("`image-refresh rearm api` to try it");
    expect(m).toContain(`would reject the failed build ${D("9")}, not the newer one`);
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
          settled: true,
          settleMessage: "",
          images: { api: `docker.io/myorg/api@${D("a")}`, sidecar: "envoy" },
        },
        "Deployment/apps/api-proxy": {
          found: true,
          settled: true,
          settleMessage: "",
          images: { proxy: `docker.io/myorg/api:stable@${D("a")}` },
        },
        "DaemonSet/agents/node-agent": {
          found: true,
          settled: true,
          settleMessage: "",
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
      o.workloads!["Deployment/apps/api"] = {
        found: true,
        settled: true,
        settleMessage: "",
        images: { api: `docker.io/myorg/api@${D("c")}` },
      };
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
