import { expect, test } from "bun:test";
import { buildEvent, microTime } from "./events.ts";

test("buildEvent produces a valid events.k8s.io/v1 Event about the state object", () => {
  const event = buildEvent(
    {
      regarding: {
        kind: "Deployment",
        metadata: {
          name: "api",
          namespace: "apps",
          generation: 3,
          resourceVersion: "481",
          annotations: {},
          uid: "u-1",
        },
      },
      type: "Warning",
      reason: "RefreshLockedOut",
      action: "Lockout",
      note: "x".repeat(2000),
      reportingInstance: "image-refresh-29012345-x7k2p",
    },
    { now: () => new Date("2025-01-02T03:04:05.123Z"), suffix: () => "1826f0b5c2a4e3d1" },
  );
  expect(event).toEqual({
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: "api.1826f0b5c2a4e3d1", namespace: "apps" },
    eventTime: "2025-01-02T03:04:05.123000Z",
    reportingController: "image-refresh.io/image-refresh",
    reportingInstance: "image-refresh-29012345-x7k2p",
    action: "Lockout",
    reason: "RefreshLockedOut",
    type: "Warning",
    note: `${"x".repeat(1021)}...`,
    regarding: {
      apiVersion: "apps/v1",
      kind: "Deployment",
      namespace: "apps",
      name: "api",
      uid: "u-1",
      resourceVersion: "481",
    },
  });
});

test("microTime always has six fractional digits in UTC", () => {
  expect(microTime(new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 0)))).toBe("2025-01-02T03:04:05.000000Z");
});

test("the default name suffix is 16 hex digits and differs between events", () => {
  const input = {
    regarding: {
      kind: "DaemonSet" as const,
      metadata: { name: "a", namespace: "n", generation: 1, resourceVersion: "1", annotations: {} },
    },
    type: "Normal" as const,
    reason: "r",
    action: "a",
    note: "n",
    reportingInstance: "",
  };
  const [a, b] = [buildEvent(input), buildEvent(input)];
  expect(a.metadata.name).toMatch(/^a\.[0-9a-f]{16}$/);
  expect(a.metadata.name).not.toBe(b.metadata.name);
  expect(a.reportingInstance).toBe("image-refresh");
  expect(a.regarding).toEqual({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    namespace: "n",
    name: "a",
    resourceVersion: "1",
  });
});
