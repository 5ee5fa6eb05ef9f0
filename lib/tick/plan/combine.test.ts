// The combination step on its own: judgements in, one decision out. Isolation (a blocking image
// holds the due images that share a workload with it), which images move together (groups), and
// which writes travel together, each a row; the decision's verdicts, groups and actions compared whole.
import { describe, expect, test } from "bun:test";
import {
  config,
  D,
  type Expected,
  observed,
  REFRESH_AGENT,
  REFRESH_API,
  REFRESH_BOTH,
  REFRESH_BOTH_SHARED,
  shareProxy,
  verdictOf,
  withBefore,
  write,
} from "../../../tests/support/plan-tables.ts";
import type { ImageVerdict, Observed } from "../model.ts";
import { combine } from "./combine.ts";
import type { Judgement } from "./judgement.ts";

type Tweak = Partial<Omit<Judgement, "verdict">> & { verdict?: Partial<ImageVerdict> };

function judged(tweaks: Record<string, Tweak>): Map<string, Judgement> {
  return new Map(
    ["api", "node-agent"].map((key) => {
      const t = tweaks[key] ?? {};
      const j: Judgement = {
        blocks: false,
        writes: {},
        countsStreak: false,
        flap: false,
        ...t,
        verdict: verdictOf(key, t.verdict),
      };
      return [key, j];
    }),
  );
}

const dueApi: Tweak = {
  verdict: { outcome: "refreshed", reason: "digest_changed" },
  due: { digest: D("c"), count: 1 },
};
const dueAgent: Tweak = {
  verdict: { outcome: "refreshed", reason: "digest_changed" },
  due: { digest: D("e"), count: 1 },
};
const lockedAgent: Tweak = { verdict: { outcome: "locked_out", reason: "flap_lockout" }, blocks: true };

interface Row {
  name: string;
  c?: (c: any) => void;
  o?: (o: Observed) => void;
  judged: Record<string, Tweak>;
  images: Record<string, string>;
  groups: Record<number, string[]>;
  actions: Expected[];
}

const ROWS: Row[] = [
  {
    name: "nothing due: no actions, no groups",
    judged: {},
    images: { api: "noop/unchanged", "node-agent": "noop/unchanged" },
    groups: {},
    actions: [],
  },
  {
    name: "one due image: its count first, one rollout per workload in config order, then reset and record",
    judged: { api: dueApi },
    images: { api: "refreshed/digest_changed", "node-agent": "noop/unchanged" },
    groups: { 0: ["api"] },
    actions: REFRESH_API,
  },
  {
    name: "two due images that share no workload are two groups",
    judged: { api: dueApi, "node-agent": dueAgent },
    images: { api: "refreshed/digest_changed", "node-agent": "refreshed/digest_changed" },
    groups: { 0: ["api"], 1: ["node-agent"] },
    actions: REFRESH_BOTH,
  },
  {
    name: "two due images that share a workload are one group, with one patch of the shared workload",
    c: shareProxy,
    judged: { api: dueApi, "node-agent": dueAgent },
    images: { api: "refreshed/digest_changed", "node-agent": "refreshed/digest_changed" },
    groups: { 0: ["api", "node-agent"] },
    actions: REFRESH_BOTH_SHARED,
  },
  {
    name: "a locked-out image holds a due image that shares a workload with it: no write, no rollout",
    c: shareProxy,
    judged: { api: dueApi, "node-agent": lockedAgent },
    images: { api: "locked_out/shared_workload", "node-agent": "locked_out/flap_lockout" },
    groups: {},
    actions: [],
  },
  {
    name: "a locked-out image holds nothing it shares no workload with",
    judged: { api: dueApi, "node-agent": lockedAgent },
    images: { api: "refreshed/digest_changed", "node-agent": "locked_out/flap_lockout" },
    groups: { 0: ["api"] },
    actions: REFRESH_API,
  },
  {
    name: "an image that blocks with an untrusted count (still noop) holds a sharer as held",
    c: shareProxy,
    judged: { api: dueApi, "node-agent": { blocks: true } },
    images: { api: "held/shared_workload", "node-agent": "noop/unchanged" },
    groups: {},
    actions: [],
  },
  {
    name: "an unresolved streak and a Warning ride with the count; the Warning is about the image's targets",
    judged: {
      api: dueApi,
      "node-agent": {
        verdict: { outcome: "unresolved", reason: "unresolved" },
        countsStreak: true,
        writes: { [`unresolved-streak-node-agent`]: "1" },
        events: [{ reason: "ImageStale", note: "stale" }],
      },
    },
    images: { api: "refreshed/digest_changed", "node-agent": "unresolved/unresolved" },
    groups: { 0: ["api"] },
    actions: [
      write({
        change: { [`unresolved-streak-node-agent`]: "1" },
        attempts: { api: 1 },
        streaks: ["node-agent"],
      }),
      {
        type: "event",
        eventType: "Warning",
        reason: "ImageStale",
        note: "stale",
        image: "node-agent",
        regarding: [{ kind: "DaemonSet", namespace: "agents", name: "node-agent" }],
      },
      ...REFRESH_API.slice(1),
    ],
  },
  {
    name: "a first observation alone is recorded after the (absent) rollouts; with a write it rides in it",
    judged: { api: { firstSeen: D("f"), verdict: { outcome: "recorded", reason: "first_observation" } } },
    images: { api: "recorded/first_observation", "node-agent": "noop/unchanged" },
    groups: {},
    actions: [{ type: "record-digests", digests: { api: D("f") } }],
  },
  {
    name: "a first observation beside a due image rides in the write before the rollouts",
    judged: {
      api: { firstSeen: D("f"), verdict: { outcome: "recorded", reason: "first_observation" } },
      "node-agent": dueAgent,
    },
    images: { api: "recorded/first_observation", "node-agent": "refreshed/digest_changed" },
    groups: { 0: ["node-agent"] },
    actions: [
      write({
        change: { [`last-refreshed-api-digest`]: D("f") },
        attempts: { "node-agent": 1 },
        firstSeen: ["api"],
      }),
      ...REFRESH_AGENT.slice(1),
    ],
  },
];

describe("combine", () => {
  for (const row of ROWS)
    test(row.name, () => {
      const o = observed(row.o);
      const d = combine(o, config(row.c), judged(row.judged));
      expect({
        images: Object.fromEntries(d.images.map((v) => [v.key, `${v.outcome}/${v.reason}`])),
        groups: d.groups,
        actions: d.actions,
      }).toEqual({ images: row.images, groups: row.groups, actions: withBefore(row.actions, o) });
    });
});
