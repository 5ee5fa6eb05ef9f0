import { describe, expect, test } from "bun:test";
import { type GroupedImage, groupOf, imageGroups } from "./groups.ts";

const d = (name: string, namespace = "apps") => ({ kind: "Deployment" as const, namespace, name });
const img = (key: string, ...targets: GroupedImage["targets"]) => ({ key, targets });

describe("imageGroups", () => {
  const cases: Array<[string, GroupedImage[], Array<[string[], string[]]>]> = [
    ["no images: no groups", [], []],
    ["one image, one workload", [img("a", d("a"))], [[["a"], ["Deployment/apps/a"]]]],
    [
      "images that share no workload: a group each, in config order",
      [img("a", d("a")), img("b", d("b")), img("c", d("c"))],
      [
        [["a"], ["Deployment/apps/a"]],
        [["b"], ["Deployment/apps/b"]],
        [["c"], ["Deployment/apps/c"]],
      ],
    ],
    [
      "two images in one workload: one group, the workload once",
      [img("a", d("w")), img("b", d("w"))],
      [[["a", "b"], ["Deployment/apps/w"]]],
    ],
    [
      "a chain: a-b share w1, b-c share w2, so a and c move together",
      [img("a", d("w1")), img("c", d("w2")), img("b", d("w1"), d("w2")), img("x", d("x"))],
      [
        [
          ["a", "c", "b"],
          ["Deployment/apps/w1", "Deployment/apps/w2"],
        ],
        [["x"], ["Deployment/apps/x"]],
      ],
    ],
    [
      "the same name in two namespaces or two kinds is two workloads",
      [img("a", d("w", "one")), img("b", d("w", "two")), img("c", { ...d("w", "one"), kind: "DaemonSet" })],
      [
        [["a"], ["Deployment/one/w"]],
        [["b"], ["Deployment/two/w"]],
        [["c"], ["DaemonSet/one/w"]],
      ],
    ],
    [
      "one image with several workloads: they are listed in config order",
      [img("a", d("z"), d("y"), d("z")), img("b", d("b"))],
      [
        [["a"], ["Deployment/apps/z", "Deployment/apps/y"]],
        [["b"], ["Deployment/apps/b"]],
      ],
    ],
    [
      "a later image joins two earlier groups: numbered by the first image of each",
      [img("a", d("w1")), img("b", d("w2")), img("c", d("c")), img("d", d("w2"), d("w1"))],
      [
        [
          ["a", "b", "d"],
          ["Deployment/apps/w1", "Deployment/apps/w2"],
        ],
        [["c"], ["Deployment/apps/c"]],
      ],
    ],
  ];
  for (const [name, images, want] of cases)
    test(name, () => {
      const groups = imageGroups(images);
      expect(groups.map((g) => [g.images, g.workloads])).toEqual(want);
      const numbers = groupOf(groups);
      for (const [n, [keys]] of want.entries()) for (const key of keys) expect(numbers.get(key)).toBe(n);
    });
});
