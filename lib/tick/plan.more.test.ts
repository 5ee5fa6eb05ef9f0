// Whole decisions, every field compared: the messages an operator reads, the gauges in
// `after`, and the edges plan.test.ts leaves implicit (a lockout while a streak is recorded,
// first-seen digests riding along with a refresh, an observation without digests).
import { describe, expect, test } from "bun:test";
import { type Config, parseConfig } from "../config.ts";
import { exampleConfig } from "../example-config.ts";
import type { Decision, Observed } from "./model.ts";
import { needsTargets, plan } from "./plan.ts";

const D = (c: string) => `sha256:${c.repeat(64)}`;
const P = "image-refresh.io";
const config: Config = parseConfig(JSON.stringify(exampleConfig("r.example")), {});

/** Settled, both digests recorded as a/b; `a` holds extra annotations, `seen` what the registry says. */
function obs(a: Record<string, string | undefined> = {}, seen: Record<string, string> = {}): Observed {
  const annotations: Record<string, string> = {
    [`${P}/last-refreshed-api-digest`]: D("a"),
    [`${P}/last-refreshed-node-agent-digest`]: D("b"),
  };
  for (const [k, v] of Object.entries(a)) {
    if (v === undefined) delete annotations[`${P}/${k}`];
    else annotations[`${P}/${k}`] = v;
  }
  const digests = { api: D("a"), "node-agent": D("b"), ...seen };
  return {
    state: { settled: true, settleMessage: "ok", annotations },
    digests: Object.fromEntries(Object.entries(digests).map(([k, d]) => [k, { ok: true, digest: d }])),
    workloads: {
      "Deployment/apps/api": { found: true, images: { api: "x" } },
      "Deployment/apps/api-proxy": { found: true, images: { proxy: "x" } },
      "DaemonSet/agents/node-agent": { found: true, images: { agent: "x" } },
    },
  };
}
const unsettled = (a: Record<string, string | undefined> = {}): Observed => {
  const o = obs(a);
  o.state.settled = false;
  o.state.settleMessage = "waiting";
  delete o.digests;
  delete o.workloads;
  return o;
};
const after = (x: Partial<Decision["after"]>) => ({ lockedOut: false, frozen: false, ...x });
const held = (attempt: string) =>
  `refresh of api is held: ${attempt} failed rollouts in a row (max 3); check the workloads, then run \`image-refresh rearm\` to re-arm`;
const FROZEN =
  "FROZEN: Deployment apps/api is not settled (waiting) for 8 ticks in a row (max 8); no refresh of Deployment apps/api, Deployment apps/api-proxy, DaemonSet agents/node-agent until it settles";

const CASES: Array<[string, Observed, Decision]> = [
  [
    "noop reports a lockout that is in force",
    obs({ "refresh-attempt": "3" }),
    {
      outcome: "noop",
      reason: "unchanged",
      message: "nothing to do",
      actions: [],
      changed: [],
      after: after({ attemptCount: 3, skipStreak: 0, lockedOut: true }),
    },
  ],
  [
    "noop below the maximum is not locked out",
    obs({ "refresh-attempt": "2" }),
    {
      outcome: "noop",
      reason: "unchanged",
      message: "nothing to do",
      actions: [],
      changed: [],
      after: after({ attemptCount: 2, skipStreak: 0 }),
    },
  ],
  [
    "noop with an untrusted counter has no count and no lockout",
    obs({ "refresh-attempt": "9x" }),
    {
      outcome: "noop",
      reason: "unchanged",
      message: "nothing to do",
      actions: [],
      changed: [],
      after: after({ attemptCount: undefined, skipStreak: 0 }),
    },
  ],
  [
    "first observation of two images names both",
    obs({ "last-refreshed-api-digest": undefined, "last-refreshed-node-agent-digest": undefined }),
    {
      outcome: "recorded",
      reason: "first_observation",
      message: "first observation of api, node-agent",
      actions: [{ type: "record-digests", digests: { api: D("a"), "node-agent": D("b") } }],
      changed: [],
      after: after({ attemptCount: 0, skipStreak: 0 }),
    },
  ],
  [
    "an observation without digests is a noop",
    { ...obs(), digests: undefined },
    {
      outcome: "noop",
      reason: "unchanged",
      message: "nothing to do",
      actions: [],
      changed: [],
      after: after({ attemptCount: 0, skipStreak: 0 }),
    },
  ],
  [
    "a lockout clears a recorded streak first",
    obs(
      { "refresh-attempt": "3", "refresh-flap-detected": "3", "refresh-skip-streak": "1" },
      { api: D("c") },
    ),
    {
      outcome: "locked_out",
      reason: "flap_lockout",
      message: held("3"),
      actions: [{ type: "clear-streak" }],
      changed: ["api"],
      after: after({ attemptCount: 3, skipStreak: 0, lockedOut: true }),
    },
  ],
  [
    "an untrusted attempt says how to clear it",
    obs({ "refresh-attempt": "x".repeat(70) }, { api: D("c") }),
    {
      outcome: "held",
      reason: "attempt_untrusted",
      message: `${P}/refresh-attempt is "${"x".repeat(64)}…", not a count; no rollout until a human checks the workloads and runs \`image-refresh rearm\` to clear it`,
      actions: [],
      changed: ["api"],
      after: after({ attemptCount: undefined, skipStreak: 0 }),
    },
  ],
  [
    "unreadable and missing targets are all named",
    (() => {
      const o = obs({}, { api: D("c"), "node-agent": D("d") });
      o.workloads = {
        "Deployment/apps/api": { found: false, message: "Forbidden (403)" },
        "Deployment/apps/api-proxy": { found: true, images: {} },
      };
      return o;
    })(),
    {
      outcome: "held",
      reason: "target_unavailable",
      message:
        'refresh of api, node-agent is due but cannot start safely: Deployment apps/api: Forbidden (403); Deployment apps/api-proxy has no container named "proxy"; DaemonSet agents/node-agent was not read',
      actions: [],
      changed: ["api", "node-agent"],
      after: after({ attemptCount: 0, skipStreak: 0 }),
    },
  ],
  [
    "a refresh carries first-seen digests into its record and counts the attempt in its message",
    obs({ "refresh-attempt": "2", "last-refreshed-node-agent-digest": undefined }, { api: D("c") }),
    {
      outcome: "refreshed",
      reason: "digest_changed",
      message: "digest changed for api; refresh attempt 3/3",
      actions: [
        // Written with the count, so a failed rollout cannot lose the first observation.
        { type: "persist-attempt", count: 3, firstSeen: { "node-agent": D("b") } },
        {
          type: "rollout",
          workload: { kind: "Deployment", namespace: "apps", name: "api" },
          containers: [{ name: "api", image: `r.example/myorg/api@${D("c")}` }],
          images: ["api"],
        },
        {
          type: "rollout",
          workload: { kind: "Deployment", namespace: "apps", name: "api-proxy" },
          containers: [{ name: "proxy", image: `r.example/myorg/api@${D("c")}` }],
          images: ["api"],
        },
        { type: "reset" },
        { type: "record-digests", digests: { "node-agent": D("b"), api: D("c") } },
        { type: "event", eventType: "Normal", reason: "Refreshed", note: `refreshed myorg/api → ${D("c")}` },
      ],
      changed: ["api"],
      after: after({ attemptCount: 0, skipStreak: 0 }),
    },
  ],
  [
    "an untrusted streak on an unsettled tick: nothing written, the lockout still reported",
    unsettled({ "refresh-skip-streak": "x", "refresh-attempt": "4" }),
    {
      outcome: "error",
      reason: "skip_streak_untrusted",
      message: `${P}/refresh-skip-streak is "x", not a count, so this unsettled tick cannot be counted; remove the annotation to reset it`,
      actions: [],
      changed: [],
      after: after({ attemptCount: 4, lockedOut: true }),
    },
  ],
  [
    "a skip below the maximum count is not a lockout",
    unsettled({ "refresh-attempt": "2" }),
    {
      outcome: "skipped",
      reason: "not_settled",
      message: "Deployment apps/api is not settled (waiting); skipping tick 1/8",
      actions: [{ type: "write-streak", value: 1 }],
      changed: [],
      after: after({ attemptCount: 2, skipStreak: 1 }),
    },
  ],
  [
    "a lockout names every held image",
    obs({ "refresh-attempt": "5", "refresh-flap-detected": "3" }, { api: D("c"), "node-agent": D("d") }),
    {
      outcome: "locked_out",
      reason: "flap_lockout",
      message:
        "refresh of api, node-agent is held: 5 failed rollouts in a row (max 3); check the workloads, then run `image-refresh rearm` to re-arm",
      actions: [],
      changed: ["api", "node-agent"],
      after: after({ attemptCount: 5, skipStreak: 0, lockedOut: true }),
    },
  ],
  [
    "targets that were not read at all hold the refresh",
    { ...obs({}, { "node-agent": D("d") }), workloads: undefined },
    {
      outcome: "held",
      reason: "target_unavailable",
      message:
        "refresh of node-agent is due but cannot start safely: DaemonSet agents/node-agent was not read",
      actions: [],
      changed: ["node-agent"],
      after: after({ attemptCount: 0, skipStreak: 0 }),
    },
  ],
  [
    "a skip names the object and the count",
    unsettled({ "refresh-skip-streak": "2" }),
    {
      outcome: "skipped",
      reason: "not_settled",
      message: "Deployment apps/api is not settled (waiting); skipping tick 3/8",
      actions: [{ type: "write-streak", value: 3 }],
      changed: [],
      after: after({ attemptCount: 0, skipStreak: 3 }),
    },
  ],
  [
    "the freeze names every target",
    unsettled({ "refresh-skip-streak": "7" }),
    {
      outcome: "frozen",
      reason: "skip_ceiling",
      message: FROZEN,
      actions: [
        { type: "write-streak", value: 8 },
        { type: "event", eventType: "Warning", reason: "RefreshFrozen", note: FROZEN },
      ],
      changed: [],
      after: after({ attemptCount: 0, skipStreak: 8, frozen: true }),
    },
  ],
];

describe("plan, whole decisions", () => {
  for (const [name, o, want] of CASES) test(name, () => expect(plan(o, config)).toEqual(want));

  test("the refresh note lists every changed image", () => {
    const d = plan(obs({}, { api: D("c"), "node-agent": D("d") }), config);
    expect(d.actions.at(-1)).toEqual({
      type: "event",
      eventType: "Normal",
      reason: "Refreshed",
      note: `refreshed myorg/api → ${D("c")}, myorg/node-agent → ${D("d")}`,
    });
    expect(d.message).toBe("digest changed for api, node-agent; refresh attempt 1/3");
  });
});

describe("needsTargets", () => {
  const ROWS: Array<[string | undefined, boolean]> = [
    [undefined, true],
    ["0", true],
    ["2", true],
    ["3", false],
    ["7", false],
    ["x", false],
  ];
  for (const [attempt, want] of ROWS)
    test(`attempt ${attempt ?? "absent"} with a changed digest: ${want}`, () =>
      expect(needsTargets(obs({ "refresh-attempt": attempt }, { api: D("c") }), config)).toBe(want));
});
