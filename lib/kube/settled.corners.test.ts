// The corners of kubectl's rules that its own table skips: a missing strategy, a deadline on a
// condition that is not Progressing, absent revisions. Each decides whether a tick may go on.
import { expect, test } from "bun:test";
import type { Workload, WorkloadKind } from "./objects.ts";
import { rolloutBlocked, rolloutStatus } from "./settled.ts";

function workload(kind: WorkloadKind, spec: Partial<Workload["spec"]>, status: Workload["status"]): Workload {
  return {
    kind,
    metadata: { name: "foo", namespace: "bar", generation: 1, resourceVersion: "1", annotations: {} },
    spec: { template: { spec: { containers: [] } }, ...spec },
    status,
  };
}
const ROLLING_ONLY = "rollout status is only available for RollingUpdate strategy type";

const CASES: Array<[string, Workload, { done: boolean; message: string; error?: string }]> = [
  [
    "a deadline on a condition other than Progressing is not a deadline",
    workload(
      "Deployment",
      { replicas: 1 },
      {
        observedGeneration: 1,
        replicas: 1,
        updatedReplicas: 1,
        availableReplicas: 1,
        conditions: [{ type: "Available", status: "False", reason: "ProgressDeadlineExceeded" }],
      },
    ),
    { done: true, message: 'deployment "foo" successfully rolled out' },
  ],
  [
    "a DaemonSet without an update strategy cannot be judged",
    workload("DaemonSet", {}, { observedGeneration: 1 }),
    { done: false, message: ROLLING_ONLY, error: ROLLING_ONLY },
  ],
  [
    "a StatefulSet without an update strategy cannot be judged",
    workload("StatefulSet", { replicas: 1 }, { observedGeneration: 1, readyReplicas: 1 }),
    { done: false, message: ROLLING_ONLY, error: ROLLING_ONLY },
  ],
  [
    "a StatefulSet with an update revision and no current revision is rolling",
    workload(
      "StatefulSet",
      { replicas: 1, updateStrategy: { type: "RollingUpdate" } },
      {
        observedGeneration: 1,
        readyReplicas: 1,
        updatedReplicas: 1,
        updateRevision: "foo-2",
      },
    ),
    {
      done: false,
      message: "waiting for statefulset rolling update to complete 1 pods at revision foo-2...",
    },
  ],
  [
    "a StatefulSet with a current revision and no update revision is rolling",
    workload(
      "StatefulSet",
      { replicas: 1, updateStrategy: { type: "RollingUpdate" } },
      {
        observedGeneration: 1,
        readyReplicas: 1,
        currentRevision: "foo-1",
      },
    ),
    { done: false, message: "waiting for statefulset rolling update to complete 0 pods at revision ..." },
  ],
  [
    "a StatefulSet with neither revision is complete",
    workload(
      "StatefulSet",
      { replicas: 1, updateStrategy: { type: "RollingUpdate" } },
      {
        observedGeneration: 1,
        readyReplicas: 1,
      },
    ),
    { done: true, message: "statefulset rolling update complete 0 pods at revision ..." },
  ],
  [
    "a StatefulSet with an empty current revision matches an absent update revision",
    workload(
      "StatefulSet",
      { replicas: 1, updateStrategy: { type: "RollingUpdate" } },
      {
        observedGeneration: 1,
        readyReplicas: 1,
        currentRevision: "",
      },
    ),
    { done: true, message: "statefulset rolling update complete 0 pods at revision ..." },
  ],
];

for (const [name, w, want] of CASES) test(name, () => expect(rolloutStatus(w)).toEqual(want));

const BLOCKED: Array<[string, Workload, string | undefined]> = [
  ["a Deployment", workload("Deployment", { replicas: 1 }, {}), undefined],
  [
    "a paused Deployment",
    workload("Deployment", { paused: true }, {}),
    "the deployment is paused (kubectl rollout resume it first)",
  ],
  ["an unpaused Deployment", workload("Deployment", { paused: false }, {}), undefined],
  [
    "a RollingUpdate DaemonSet",
    workload("DaemonSet", { updateStrategy: { type: "RollingUpdate" } }, {}),
    undefined,
  ],
  [
    "an OnDelete DaemonSet",
    workload("DaemonSet", { updateStrategy: { type: "OnDelete" } }, {}),
    `${ROLLING_ONLY}; its updateStrategy is OnDelete`,
  ],
  [
    "a StatefulSet without a strategy",
    workload("StatefulSet", {}, {}),
    `${ROLLING_ONLY}; its updateStrategy is unset`,
  ],
  [
    "a partitioned RollingUpdate StatefulSet",
    workload(
      "StatefulSet",
      { updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 2 } } },
      {},
    ),
    undefined,
  ],
];
for (const [label, w, want] of BLOCKED)
  test(`rolloutBlocked: ${label}`, () => expect(rolloutBlocked(w)).toBe(want));
