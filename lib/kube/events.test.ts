import { describe, expect, test } from "bun:test";
import { buildEvent, microTime, truncateUtf8 } from "./events.ts";

test("buildEvent produces a valid events.k8s.io/v1 Event about the state object", () => {
  const event = buildEvent(
    {
      regarding: {
        kind: "Deployment",
        metadata: {
          name: "api",
          namespace: "apps",
          resourceVersion: "481",
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
    reason: "Refreshed" as const,
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

describe("truncateUtf8: the apiserver counts bytes (Go len), not characters", () => {
  const ROWS: Array<[string, string, number, string]> = [
    ["short ASCII is kept", "abc", 10, "abc"],
    ["exactly at the limit is kept", "abcde", 5, "abcde"],
    ["ASCII over the limit is cut to fit with the marker", "abcdefgh", 6, "abc..."],
    ["a 3-byte arrow counts 3", "a→b", 4, "a..."],
    ["never splits a character", "→→→", 8, "→..."],
    ["400 arrows fit 1024 bytes after the cut", "→".repeat(400), 1024, `${"→".repeat(340)}...`],
  ];
  for (const [label, input, max, want] of ROWS)
    test(label, () => {
      const got = truncateUtf8(input, max);
      expect(got).toBe(want);
      expect(Buffer.byteLength(got)).toBeLessThanOrEqual(max);
    });

  test("a long note of many repositories and digests fits the note limit in bytes", () => {
    const note = `refreshed ${Array.from({ length: 12 }, (_, i) => `myorg/svc-${i} → sha256:${"a".repeat(64)}`).join(", ")}`;
    const e = buildEvent({
      regarding: {
        kind: "Deployment",
        metadata: { name: "api", namespace: "apps", resourceVersion: "1" },
      },
      type: "Normal",
      reason: "Refreshed",
      action: "Refresh",
      note,
      reportingInstance: "pod",
    });
    expect(Buffer.byteLength(e.note)).toBeLessThanOrEqual(1024);
    expect(e.note.endsWith("...")).toBe(true);
  });
});

describe("truncateUtf8 against counting character by character", () => {
  /** The plain definition: whole characters while they and the marker fit. */
  const byCharacter = (s: string, max: number) => {
    if (Buffer.byteLength(s, "utf8") <= max) return s;
    let out = "";
    for (const ch of s) {
      if (Buffer.byteLength(out + ch, "utf8") > max - 3) break;
      out += ch;
    }
    return `${out}...`;
  };
  const pieces = ["a", "é", "→", "😀", "myorg/svc-1 → sha256:", " "];
  test("the same cut for random mixes of 1- to 4-byte characters and limits", () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let run = 0; run < 2000; run++) {
      const s = Array.from({ length: next(80) }, () => pieces[next(pieces.length)]).join("");
      const max = 3 + next(120);
      expect(truncateUtf8(s, max)).toBe(byCharacter(s, max));
    }
  });
});
