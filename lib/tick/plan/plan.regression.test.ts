// Regressions in the plan, as a table: the base world (api recorded at a, verified at 11:30, the
// build before it d), Deployment apps/api not settled, its pods as each case says. Evidence
// against the recorded build within regressionWindow is a failed attempt of it, reverted to d;
// anything else is the settled guard's skip, as before.
import { describe, expect, test } from "bun:test";
import {
  ann,
  both,
  config,
  D,
  observed,
  roll,
  unsettled,
  write,
} from "../../../tests/support/plan-tables.ts";
import type { ContainerState, Pod } from "../../kube/pods.ts";
import type { Observed } from "../model.ts";
import { plan } from "./plan.ts";

const RUNNING_A = `docker.io/myorg/api@${D("a")}`;
const container = (c: Partial<ContainerState> = {}): ContainerState => ({
  name: "api",
  image: RUNNING_A,
  ready: true,
  restartCount: 0,
  ...c,
});
const pod = (p: Partial<Pod> = {}, c: Partial<ContainerState> = {}): Pod => ({
  name: "api-7d9-x2b",
  uid: "u1",
  labels: { app: "api" },
  deleting: false,
  phase: "Running",
  ready: true,
  images: { api: RUNNING_A, sidecar: "envoy" },
  containers: [container(c)],
  ...p,
});
const crashing = pod(
  { ready: false, readyReason: "ContainersNotReady" },
  { ready: false, restartCount: 3, waiting: "CrashLoopBackOff", lastTerminated: "Error", lastExitCode: 1 },
);

/** Verified at 11:30 (the tick is at 12:00), d before it; apps/api unsettled, with these pods. */
const world =
  (pods: Pod[] | { error: string }, at = "2026-12-01T11:30:00Z") =>
  (o: Observed) => {
    both(
      unsettled,
      (x) => ann(x, "verified-api-at", at),
      (x) => ann(x, "previous-api-digest", D("d")),
    )(o);
    const w = o.workloads?.["Deployment/apps/api"];
    if (w?.found) w.selector = "app=api";
    o.pods = { "Deployment/apps/api": pods };
  };
const BACK_D = `docker.io/myorg/api@${D("d")}`;
const CLOCK = Date.parse("2026-12-01T12:00:00Z");

/** The same, with apps/api settled and available: a restart since the verification is evidence all the same. */
const settledWorld =
  (pods: Pod[], tweak: (o: Observed) => void = () => {}) =>
  (o: Observed) => {
    world(pods)(o);
    const w = o.workloads?.["Deployment/apps/api"];
    if (w?.found) Object.assign(w, { settled: true, settleMessage: "successfully rolled out" });
    tweak(o);
  };
/** A pod that restarted once at `at` and runs Ready again. */
const restartedAt = (at: string) =>
  pod({}, { restartCount: 1, lastTerminated: "Error", lastExitCode: 1, lastFinishedAt: at });
/** A regression of a already counted on an earlier tick, seen at `at`. */
const counted = (at: string) => (o: Observed) => {
  ann(o, "last-attempt-api", `${D("a")} regressed ${at}`);
  ann(o, "refresh-attempt-api", "1");
};

type Row = [name: string, o: (o: Observed) => void, c: (c: any) => void, want: string, actions?: string[]];
const NONE = () => {};
const rows: Row[] = [
  [
    "a crash-looping pod of the recorded build: failed, regressed",
    world([crashing]),
    NONE,
    "failed/regressed",
  ],
  [
    "a running pod that is not Ready",
    world([pod({ ready: false }, { ready: false })]),
    NONE,
    "failed/regressed",
  ],
  [
    "pods only Pending: a skip",
    world([pod({ phase: "Pending", ready: false }, { ready: false, waiting: "ContainerCreating" })]),
    NONE,
    "skipped/not_settled",
  ],
  [
    "unready because the node is: a skip",
    world([pod({ ready: false, readyReason: "NodeNotReady" })]),
    NONE,
    "skipped/not_settled",
  ],
  ["past regressionWindow: a skip", world([crashing], "2026-12-01T10:59:59Z"), NONE, "skipped/not_settled"],
  [
    "a longer regressionWindow keeps it open",
    world([crashing], "2026-12-01T10:59:59Z"),
    (c) => (c.regressionWindow = "2h"),
    "failed/regressed",
  ],
  ["pods that could not be listed: a skip", world({ error: "Forbidden" }), NONE, "skipped/not_settled"],
  [
    "pods of another build crashing: a skip",
    world([pod({ images: { api: BACK_D } }, { waiting: "CrashLoopBackOff", restartCount: 2 })]),
    NONE,
    "skipped/not_settled",
  ],
  [
    "a restart from before the verification: a skip",
    world([pod({}, { restartCount: 1, lastFinishedAt: "2026-12-01T11:00:00Z" })]),
    NONE,
    "skipped/not_settled",
  ],
  [
    "settled, a pod restarted once since the verification and Ready again: failed, regressed",
    settledWorld([restartedAt("2026-12-01T11:50:00Z")]),
    NONE,
    "failed/regressed",
  ],
  [
    "settled, the restart exactly at the verification: failed, regressed",
    settledWorld([restartedAt("2026-12-01T11:30:00Z")]),
    NONE,
    "failed/regressed",
  ],
  [
    "settled, a restart from before the verification: unchanged",
    settledWorld([restartedAt("2026-12-01T11:29:59Z")]),
    NONE,
    "noop/unchanged",
  ],
  ["settled, every pod Ready without a restart: unchanged", settledWorld([pod()]), NONE, "noop/unchanged"],
  [
    "settled, a Pending pod: unchanged",
    settledWorld([pod({ phase: "Pending", ready: false }, { ready: false, waiting: "ContainerCreating" })]),
    NONE,
    "noop/unchanged",
  ],
  [
    "settled, past regressionWindow: unchanged",
    settledWorld([restartedAt("2026-12-01T11:50:00Z")], (o) =>
      ann(o, "verified-api-at", "2026-12-01T10:59:59Z"),
    ),
    NONE,
    "noop/unchanged",
  ],
  [
    "settled, the restart already counted by the regression of an earlier tick: not counted again",
    settledWorld([restartedAt("2026-12-01T11:50:00Z")], counted("2026-12-01T11:50:00Z")),
    NONE,
    "noop/unchanged",
  ],
  [
    "settled, a restart after the regression already counted: counted on top",
    settledWorld([restartedAt("2026-12-01T11:55:00Z")], counted("2026-12-01T11:50:00Z")),
    NONE,
    "failed/regressed",
  ],
  [
    "locked out already: left to the settled guard, as before",
    both(world([crashing]), (o) => ann(o, "refresh-attempt-api", "3")),
    NONE,
    "skipped/not_settled",
  ],
];

describe("regression verdicts", () => {
  for (const [name, o, c, want] of rows)
    test(name, () => {
      const v = plan(observed(o), config(c)).images.find((x) => x.key === "api");
      expect(`${v?.outcome}/${v?.reason}`).toBe(want);
    });
});

describe("a regression's actions", () => {
  test("on a settled workload: counted with the time of the restart it saw, when later than the clock", () => {
    const late = "2026-12-01T12:00:03Z";
    const d = plan(observed(settledWorld([restartedAt(late)])), config());
    const api = d.images.find((x) => x.key === "api");
    expect(api?.message).toContain(
      "Deployment apps/api is available, but pod apps/api-7d9-x2b: container api restarted (restart count 0 -> 1) (last exit: Error, code 1); failed attempt 1/3",
    );
    expect(d.actions[0]).toMatchObject({
      type: "write-state",
      attempts: { api: { count: 1, digest: D("a"), regressed: true, at: Date.parse(late) } },
    });
  });

  test("the failed attempt of a (count, failed digest) first, then every target back on d, then d recorded; no reset", () => {
    const d = plan(observed(world([crashing])), config());
    const api = d.images.find((x) => x.key === "api");
    expect(api?.message).toContain(
      `api: build ${D("a")} regressed within regressionWindow of its verification: Deployment apps/api does not settle, pod apps/api-7d9-x2b: container api waits in CrashLoopBackOff after 3 restarts (last exit: Error, code 1); failed attempt 1/3; putting its targets back on ${D("d")}`,
    );
    /** The way back: a rollout marked `back`, each container on d (where it sits and what it ran, as observed). */
    const back = (name: string, container: string) => ({
      ...roll(name, [], ["api"]),
      back: true,
      containers: [expect.objectContaining({ name: container, image: BACK_D })],
    });
    const want: unknown[] = [
      write({ attempts: { api: { count: 1, digest: D("a"), regressed: true, at: CLOCK } as never } }),
      back("api", "api"),
      back("api-proxy", "proxy"),
      { type: "record-revert", digests: { api: D("d") } },
    ];
    expect(d.actions.filter((a) => a.type !== "event")).toEqual(want as never);
    const event = d.actions.find((a) => a.type === "event");
    expect(event).toMatchObject({
      reason: "BuildRegressed",
      regarding: [{ kind: "Deployment", namespace: "apps", name: "api" }],
    });
  });

  test("without a previous build: counted, nothing rolled out, says what to do by hand", () => {
    const d = plan(
      observed(both(world([crashing]), (o) => ann(o, "previous-api-digest", undefined))),
      config(),
    );
    expect(d.actions.filter((a) => a.type === "rollout" || a.type === "record-revert")).toEqual([]);
    expect(d.actions[0]).toMatchObject({
      type: "write-state",
      attempts: { api: { count: 1, digest: D("a") } },
    });
    expect(d.images[0]?.message).toContain("no earlier build is recorded to go back to");
  });
});
