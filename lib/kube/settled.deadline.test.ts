// A progress deadline judged for the rollout our write started: the Progressing condition the
// PATCH response already carried is an earlier rollout's (the deployment controller keeps
// ProgressDeadlineExceeded across a generation that brings back an existing ReplicaSet), so it is
// no verdict; any other condition at that reason is. Without the written object (the settled
// guard, `status`) every deadline counts, as for kubectl.
import { describe, expect, test } from "bun:test";
import type { Workload } from "./objects.ts";
import { deadlineExceeded, rolloutStatus } from "./settled.ts";

type Condition = NonNullable<Workload["status"]["conditions"]>[number];

const EXCEEDED: Condition = {
  type: "Progressing",
  status: "False",
  reason: "ProgressDeadlineExceeded",
  message: 'ReplicaSet "one-bad" has timed out progressing.',
  lastUpdateTime: "2026-12-01T22:50:41Z",
  lastTransitionTime: "2026-12-01T22:50:41Z",
};
const AVAILABLE: Condition = {
  type: "Available",
  status: "True",
  reason: "MinimumReplicasAvailable",
  message: "Deployment has minimum availability.",
  lastUpdateTime: "2026-12-01T22:50:30Z",
  lastTransitionTime: "2026-12-01T22:50:30Z",
};

function one(generation: number, status: Workload["status"]): Workload {
  return {
    kind: "Deployment",
    metadata: { name: "one", namespace: "linger", generation, resourceVersion: "1", annotations: {} },
    spec: { replicas: 1, template: { spec: { containers: [{ name: "one", image: "x" }] } } },
    status,
  };
}

/** The PATCH response of the revert: the new generation, the failed rollout's status. */
const written = one(3, {
  observedGeneration: 2,
  replicas: 2,
  updatedReplicas: 1,
  availableReplicas: 1,
  conditions: [AVAILABLE, EXCEEDED],
});
/** The controller's first status for the revert: observed, the bad pod still counted, the condition kept. */
const observedWith = (progressing: Condition) =>
  one(3, {
    observedGeneration: 3,
    replicas: 2,
    updatedReplicas: 1,
    availableReplicas: 1,
    conditions: [AVAILABLE, progressing],
  });

const PENDING = 'Waiting for deployment "one" rollout to finish: 1 old replicas are pending termination...';
const ERROR = 'deployment "one" exceeded its progress deadline';

describe("a progress deadline, judged for the rollout a write started", () => {
  const cases: Array<[string, Condition, Workload | undefined, boolean]> = [
    ["the condition the write was answered with is left over: no verdict", EXCEEDED, written, false],
    [
      "a deadline reached again after progress (new times) is this rollout's",
      {
        ...EXCEEDED,
        message: 'ReplicaSet "one-good" has timed out progressing.',
        lastUpdateTime: "2026-12-01T22:51:02Z",
        lastTransitionTime: "2026-12-01T22:51:02Z",
      },
      written,
      true,
    ],
    [
      "another update time alone makes it another condition",
      { ...EXCEEDED, lastUpdateTime: "2026-12-01T22:51:02Z" },
      written,
      true,
    ],
    [
      "another transition time alone makes it another condition",
      { ...EXCEEDED, lastTransitionTime: "2026-12-01T22:51:02Z" },
      written,
      true,
    ],
    [
      "another message alone makes it another condition",
      { ...EXCEEDED, message: 'ReplicaSet "one-good" has timed out progressing.' },
      written,
      true,
    ],
    [
      "the write was answered while the rollout still progressed: a deadline now is this one's",
      EXCEEDED,
      one(3, {
        observedGeneration: 2,
        conditions: [{ ...EXCEEDED, status: "True", reason: "ReplicaSetUpdated" }],
      }),
      true,
    ],
    ["the write was answered without conditions", EXCEEDED, one(3, { observedGeneration: 2 }), true],
    ["no written object (the settled guard): every deadline counts", EXCEEDED, undefined, true],
    [
      "a condition at another reason is no deadline, written or not",
      { ...EXCEEDED, status: "True", reason: "NewReplicaSetAvailable" },
      undefined,
      false,
    ],
  ];
  for (const [name, progressing, w, want] of cases)
    test(name, () => expect(deadlineExceeded(observedWith(progressing), w)).toBe(want));

  test("a left-over deadline is judged by the numbers, as if it were not there", () => {
    expect(rolloutStatus(observedWith(EXCEEDED), written)).toEqual({ done: false, message: PENDING });
  });

  test("the same object without the written one fails as kubectl fails it", () => {
    expect(rolloutStatus(observedWith(EXCEEDED))).toEqual({ done: false, message: ERROR, error: ERROR });
  });

  test("a deadline is still not judged before the generation is observed", () => {
    const unobserved = one(3, { observedGeneration: 2, conditions: [EXCEEDED] });
    expect(rolloutStatus(unobserved)).toEqual({
      done: false,
      message: "Waiting for deployment spec update to be observed...",
    });
  });
});
