// The evidence judgement as a table: a base pod (Running, Ready, no restarts), one tweak per
// case, the whole verdict compared.
import { describe, expect, test } from "bun:test";
import { type EvidenceRules, podEvidence, podsRunning, restartBaseline } from "./pod-evidence.ts";
import type { ContainerState, Pod } from "./pods.ts";

const container = (c: Partial<ContainerState> = {}): ContainerState => ({
  name: "api",
  image: "r/api@sha256:b",
  ready: true,
  restartCount: 0,
  ...c,
});
const pod = (p: Partial<Pod> = {}, c: Partial<ContainerState> = {}): Pod => ({
  name: "api-1",
  uid: "u1",
  labels: {},
  deleting: false,
  phase: "Running",
  ready: true,
  images: { api: "r/api@sha256:b" },
  containers: [container(c)],
  ...p,
});
const WAIT: EvidenceRules = { unready: "none" };
const WINDOW = (pods: Pod[]): EvidenceRules => ({ unready: "known", baseline: restartBaseline(pods) });
const REGRESSION: EvidenceRules = { unready: "all", restartsSince: "2026-01-01T10:00:00Z" };
const unready = { ready: false, readyReason: "ContainersNotReady" };
const crashing = {
  ready: false,
  restartCount: 2,
  waiting: "CrashLoopBackOff",
  lastTerminated: "Error",
  lastExitCode: 1,
};

const cases: Array<[string, Pod[], EvidenceRules, ReturnType<typeof podEvidence>]> = [
  ["a Ready pod is no evidence", [pod()], WAIT, undefined],
  [
    "CrashLoopBackOff during the wait",
    [pod(unready, crashing)],
    WAIT,
    {
      pod: "api-1",
      container: "api",
      kind: "crash_loop",
      what: "container api waits in CrashLoopBackOff after 2 restarts (last exit: Error, code 1)",
    },
  ],
  [
    "ErrImagePull on a Pending pod",
    [pod({ phase: "Pending", ready: false }, { ready: false, waiting: "ErrImagePull" })],
    WAIT,
    {
      pod: "api-1",
      container: "api",
      kind: "image_pull",
      what: "container api cannot pull its image (ErrImagePull)",
    },
  ],
  [
    "ImagePullBackOff",
    [pod({ phase: "Pending", ready: false }, { ready: false, waiting: "ImagePullBackOff" })],
    WAIT,
    {
      pod: "api-1",
      container: "api",
      kind: "image_pull",
      what: "container api cannot pull its image (ImagePullBackOff)",
    },
  ],
  [
    "a restart of a new pod, running again",
    [pod({}, { restartCount: 1, lastTerminated: "OOMKilled", lastExitCode: 137 })],
    WAIT,
    {
      pod: "api-1",
      container: "api",
      kind: "restarted",
      what: "container api restarted (restart count 0 -> 1) (last exit: OOMKilled, code 137)",
    },
  ],
  [
    "a starting pod is no evidence",
    [pod({ phase: "Pending", ready: false }, { ready: false, waiting: "ContainerCreating" })],
    WAIT,
    undefined,
  ],
  ["running, not Ready, during the wait: still starting", [pod(unready, { ready: false })], WAIT, undefined],
  [
    "running, not Ready, in the window: a pod that was Ready",
    [pod(unready, { ready: false })],
    WINDOW([pod()]),
    { pod: "api-1", kind: "unready", what: "is running but not Ready (ContainersNotReady)" },
  ],
  [
    "in the window, a replacement pod still starting",
    [pod({ uid: "u2", ...unready }, { ready: false })],
    WINDOW([pod()]),
    undefined,
  ],
  [
    "restarts already there when the window began",
    [pod({}, { restartCount: 3 })],
    WINDOW([pod({}, { restartCount: 3 })]),
    undefined,
  ],
  [
    "one more restart in the window",
    [pod({}, { restartCount: 4 })],
    WINDOW([pod({}, { restartCount: 3 })]),
    {
      pod: "api-1",
      container: "api",
      kind: "restarted",
      what: "container api restarted (restart count 3 -> 4)",
    },
  ],
  [
    "a pod being deleted is no evidence",
    [pod({ deleting: true, ...unready }, crashing)],
    REGRESSION,
    undefined,
  ],
  ["unready because its node is (containers still ready)", [pod(unready)], REGRESSION, undefined],
  [
    "unready, NodeNotReady",
    [pod({ ready: false, readyReason: "NodeNotReady" }, { ready: false })],
    REGRESSION,
    undefined,
  ],
  [
    "a Pending pod is no evidence of a regression",
    [pod({ phase: "Pending", ready: false }, { ready: false })],
    REGRESSION,
    undefined,
  ],
  [
    "a regression: running, not Ready",
    [pod(unready, { ready: false })],
    REGRESSION,
    { pod: "api-1", kind: "unready", what: "is running but not Ready (ContainersNotReady)" },
  ],
  [
    "a restart before the verification",
    [pod({}, { restartCount: 1, lastFinishedAt: "2026-01-01T09:59:00Z" })],
    REGRESSION,
    undefined,
  ],
  [
    "a restart after the verification",
    [pod({}, { restartCount: 1, lastFinishedAt: "2026-01-01T10:05:00Z" })],
    REGRESSION,
    {
      pod: "api-1",
      container: "api",
      kind: "restarted",
      finishedAt: "2026-01-01T10:05:00Z",
      what: "container api restarted (restart count 0 -> 1)",
    },
  ],
  [
    "a crash is named before an unready pod",
    [
      pod({ name: "api-0", ...unready }, { ready: false }),
      pod({ name: "api-2", uid: "u2", ...unready }, crashing),
    ],
    REGRESSION,
    {
      pod: "api-2",
      container: "api",
      kind: "crash_loop",
      what: "container api waits in CrashLoopBackOff after 2 restarts (last exit: Error, code 1)",
    },
  ],
  [
    "a restart already counted by an earlier regression is no evidence again",
    [pod({}, { restartCount: 1, lastFinishedAt: "2026-01-01T10:05:00Z" })],
    { ...REGRESSION, restartsAfter: "2026-01-01T10:05:00Z" },
    undefined,
  ],
  [
    "a restart after the one already counted",
    [pod({}, { restartCount: 2, lastFinishedAt: "2026-01-01T10:05:01Z" })],
    { ...REGRESSION, restartsAfter: "2026-01-01T10:05:00Z" },
    {
      pod: "api-1",
      container: "api",
      kind: "restarted",
      finishedAt: "2026-01-01T10:05:01Z",
      what: "container api restarted (restart count 0 -> 2)",
    },
  ],
  [
    "after a counted regression, a restart that does not say when it finished is no evidence",
    [pod({}, { restartCount: 2 })],
    { ...REGRESSION, restartsAfter: "2026-01-01T10:05:00Z" },
    undefined,
  ],
];

describe("podEvidence", () => {
  for (const [name, pods, rules, want] of cases)
    test(name, () => expect(podEvidence(pods, rules)).toEqual(want));
});

test("podsRunning keeps the pods that run every expected image", () => {
  const old = pod({ name: "old", images: { api: "r/api@sha256:a" } });
  expect(podsRunning([old, pod()], { api: "r/api@sha256:b" }).map((p) => p.name)).toEqual(["api-1"]);
});
