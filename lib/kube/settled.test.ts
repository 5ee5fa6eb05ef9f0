// Mirrors kubectl's pkg/polymorphichelpers/rollout_status_test.go case by case (names kept), plus
// the branches that table leaves out: progress deadline, omitted zeroes, strategies.
import { describe, expect, test } from "bun:test";
import type { Workload, WorkloadKind } from "./objects.ts";
import { rolloutStatus } from "./settled.ts";

type Status = Workload["status"];
type Spec = Partial<Workload["spec"]>;

function workload(kind: WorkloadKind, generation: number, spec: Spec, status: Status): Workload {
  return {
    kind,
    metadata: { name: "foo", namespace: "bar", generation, resourceVersion: "1", annotations: {} },
    spec: { template: { spec: { containers: [{ name: "test", image: "test_image" }] } }, ...spec },
    status,
  };
}

const rolling = { updateStrategy: { type: "RollingUpdate" } };
const partition2 = { updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 2 } } };

type Case = [name: string, w: Workload, want: { done: boolean; message: string; error?: string }];

const deployment = (gen: number, replicas: number | undefined, status: Status) =>
  workload("Deployment", gen, { replicas }, status);

const deploymentCases: Case[] = [
  [
    "test1",
    deployment(0, 1, { observedGeneration: 1, replicas: 1, updatedReplicas: 0, availableReplicas: 1 }),
    {
      done: false,
      message: 'Waiting for deployment "foo" rollout to finish: 0 out of 1 new replicas have been updated...',
    },
  ],
  [
    "test2",
    deployment(1, 1, { observedGeneration: 1, replicas: 2, updatedReplicas: 1, availableReplicas: 2 }),
    {
      done: false,
      message: 'Waiting for deployment "foo" rollout to finish: 1 old replicas are pending termination...',
    },
  ],
  [
    "test3",
    deployment(1, 2, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }),
    {
      done: false,
      message: 'Waiting for deployment "foo" rollout to finish: 1 of 2 updated replicas are available...',
    },
  ],
  [
    "test4",
    deployment(1, 2, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }),
    { done: true, message: 'deployment "foo" successfully rolled out' },
  ],
  [
    "test5",
    deployment(2, 2, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }),
    { done: false, message: "Waiting for deployment spec update to be observed..." },
  ],
  [
    "progress deadline exceeded fails on the reason alone",
    deployment(1, 2, {
      observedGeneration: 1,
      conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded" }],
    }),
    {
      done: false,
      message: 'deployment "foo" exceeded its progress deadline',
      error: 'deployment "foo" exceeded its progress deadline',
    },
  ],
  [
    "a deadline is not judged before the generation is observed",
    deployment(3, 2, {
      observedGeneration: 2,
      conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded" }],
    }),
    { done: false, message: "Waiting for deployment spec update to be observed..." },
  ],
  [
    "omitted zeroes read as 0: scaled to zero is rolled out",
    deployment(4, 0, { observedGeneration: 4 }),
    { done: true, message: 'deployment "foo" successfully rolled out' },
  ],
  [
    "no spec.replicas skips the first check",
    deployment(1, undefined, { observedGeneration: 1, replicas: 2, updatedReplicas: 1 }),
    {
      done: false,
      message: 'Waiting for deployment "foo" rollout to finish: 1 old replicas are pending termination...',
    },
  ],
  [
    "missing observedGeneration is 0",
    deployment(1, 1, { replicas: 1, updatedReplicas: 1, availableReplicas: 1 }),
    { done: false, message: "Waiting for deployment spec update to be observed..." },
  ],
];

const daemonSet = (gen: number, status: Status, spec: Spec = rolling) =>
  workload("DaemonSet", gen, spec, status);

const daemonSetCases: Case[] = [
  [
    "test1",
    daemonSet(0, {
      observedGeneration: 1,
      updatedNumberScheduled: 0,
      desiredNumberScheduled: 1,
      numberAvailable: 0,
    }),
    {
      done: false,
      message: 'Waiting for daemon set "foo" rollout to finish: 0 out of 1 new pods have been updated...',
    },
  ],
  [
    "test2",
    daemonSet(1, {
      observedGeneration: 1,
      updatedNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 1,
    }),
    {
      done: false,
      message: 'Waiting for daemon set "foo" rollout to finish: 1 of 2 updated pods are available...',
    },
  ],
  [
    "test3",
    daemonSet(1, {
      observedGeneration: 1,
      updatedNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 2,
    }),
    { done: true, message: 'daemon set "foo" successfully rolled out' },
  ],
  [
    "test4",
    daemonSet(2, {
      observedGeneration: 1,
      updatedNumberScheduled: 2,
      desiredNumberScheduled: 2,
      numberAvailable: 2,
    }),
    { done: false, message: "Waiting for daemon set spec update to be observed..." },
  ],
  [
    "WrongUpdateStrategyType (OnDelete) is an error",
    daemonSet(1, { observedGeneration: 1 }, { updateStrategy: { type: "OnDelete" } }),
    {
      done: false,
      message: "rollout status is only available for RollingUpdate strategy type",
      error: "rollout status is only available for RollingUpdate strategy type",
    },
  ],
];

const sts = (gen: number, spec: Spec, status: Status) =>
  workload("StatefulSet", gen, { replicas: 3, ...spec }, status);

const statefulSetCases: Case[] = [
  [
    "on delete returns an error",
    sts(
      1,
      { updateStrategy: { type: "OnDelete" } },
      { observedGeneration: 1, replicas: 0, readyReplicas: 1 },
    ),
    {
      done: false,
      message: "rollout status is only available for RollingUpdate strategy type",
      error: "rollout status is only available for RollingUpdate strategy type",
    },
  ],
  [
    "unobserved update is not complete",
    sts(2, rolling, {
      observedGeneration: 1,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 0,
    }),
    { done: false, message: "Waiting for statefulset spec update to be observed..." },
  ],
  [
    "if all pods are not ready the update is not complete",
    sts(1, rolling, {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 2,
      currentReplicas: 3,
      updatedReplicas: 0,
    }),
    { done: false, message: "Waiting for 1 pods to be ready..." },
  ],
  [
    "partition update completes when all replicas above the partition are updated",
    sts(1, partition2, {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 2,
      updatedReplicas: 1,
    }),
    { done: true, message: "partitioned roll out complete: 1 new pods have been updated..." },
  ],
  [
    "partition update is in progress if all pods above the partition have not been updated",
    sts(1, partition2, {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 0,
    }),
    {
      done: false,
      message: "Waiting for partitioned roll out to finish: 0 out of 1 new pods have been updated...",
    },
  ],
  [
    "update completes when all replicas are current",
    sts(1, rolling, {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      currentRevision: "foo",
      updateRevision: "foo",
    }),
    { done: true, message: "statefulset rolling update complete 3 pods at revision foo..." },
  ],
  [
    "observedGeneration 0 is never observed, even at generation 0",
    sts(0, rolling, { replicas: 3, readyReplicas: 3 }),
    { done: false, message: "Waiting for statefulset spec update to be observed..." },
  ],
  [
    "revisions differ while rolling (no rollingUpdate block)",
    sts(2, rolling, {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 3,
      currentReplicas: 2,
      updatedReplicas: 1,
      currentRevision: "a",
      updateRevision: "b",
    }),
    { done: false, message: "waiting for statefulset rolling update to complete 1 pods at revision b..." },
  ],
  [
    "server-defaulted partition 0 takes the partition branch",
    sts(
      2,
      { updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } } },
      { observedGeneration: 2, replicas: 3, readyReplicas: 3, updatedReplicas: 3 },
    ),
    { done: true, message: "partitioned roll out complete: 3 new pods have been updated..." },
  ],
];

for (const [kind, cases] of [
  ["Deployment", deploymentCases],
  ["DaemonSet", daemonSetCases],
  ["StatefulSet", statefulSetCases],
] as const) {
  describe(`rolloutStatus ${kind}`, () => {
    for (const [name, w, want] of cases) {
      test(name, () => expect(rolloutStatus(w)).toEqual(want));
    }
  });
}
