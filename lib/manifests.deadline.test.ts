// The Job deadline rule: ceil(groups / parallelism) rounds of the longest group's workloads, each
// waited for forward and (onFailure: revert) back, each wait rolloutTimeout + verifyFor, plus slack.
import { describe, expect, test } from "bun:test";
import { parseConfig } from "./config.ts";
import { DEADLINE_SLACK_SECONDS, deadlineRule, deadlineTerms, minimumDeadlineSeconds } from "./manifests.ts";

const image = (repository: string, ...names: string[]) => ({
  repository,
  targets: names.map((name) => ({ kind: "Deployment", name, container: repository.split("/")[1] })),
});
const config = (images: unknown[], settings: Record<string, unknown> = {}) =>
  parseConfig(
    JSON.stringify({
      tag: "stable",
      registry: { host: "docker.io" },
      namespace: "apps",
      store: { namespace: "image-refresh" },
      rolloutTimeout: "10m",
      verifyFor: "2m",
      images,
      ...settings,
    }),
    {},
  );
const WAIT = 720; // 10m + 2m

describe("deadlineTerms and minimumDeadlineSeconds", () => {
  const singles = (n: number) => Array.from({ length: n }, (_, i) => image(`myorg/s${i}`, `s${i}`));
  const cases: Array<
    [
      string,
      unknown[],
      Record<string, unknown>,
      { groups: number; longest: number; rounds: number; waits: number },
    ]
  > = [
    ["one image, one workload", singles(1), {}, { groups: 1, longest: 1, rounds: 1, waits: 2 }],
    [
      "four independent images, parallelism 4: one round",
      singles(4),
      {},
      { groups: 4, longest: 1, rounds: 1, waits: 2 },
    ],
    [
      "five independent images, parallelism 4: two rounds",
      singles(5),
      {},
      { groups: 5, longest: 1, rounds: 2, waits: 2 },
    ],
    [
      "fifty at parallelism 1: fifty rounds",
      singles(50),
      { parallelism: 1 },
      { groups: 50, longest: 1, rounds: 50, waits: 2 },
    ],
    [
      "images sharing a workload are one group; its workloads add up",
      [image("myorg/a", "a", "shared"), image("myorg/b", "shared", "b"), image("myorg/c", "c")],
      {},
      { groups: 2, longest: 3, rounds: 1, waits: 2 },
    ],
    [
      "onFailure: keep waits once",
      singles(2),
      { onFailure: "keep" },
      { groups: 2, longest: 1, rounds: 1, waits: 1 },
    ],
    [
      "a pinned image is never due: not counted",
      [image("myorg/a", "a"), { ...image("myorg/p", "p1", "p2", "p3"), pinned: true }],
      {},
      { groups: 1, longest: 1, rounds: 1, waits: 2 },
    ],
  ];
  for (const [name, images, settings, want] of cases)
    test(name, () => {
      const c = config(images, settings);
      expect(deadlineTerms(c)).toEqual(want);
      expect(minimumDeadlineSeconds(c)).toBe(
        want.rounds * want.longest * want.waits * WAIT + DEADLINE_SLACK_SECONDS,
      );
    });

  test("the rule as told: every figure of this config", () => {
    const c = config([image("myorg/a", "a", "shared"), image("myorg/b", "shared"), image("myorg/c", "c")]);
    expect(deadlineRule(c)).toBe(
      "ceil(2 groups / parallelism 4) × 2 workloads (the longest group) × 2 waits (onFailure: revert) × (rolloutTimeout 600s + verifyFor 120s) + 120s = 3000s",
    );
  });
});
