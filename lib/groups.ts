// Rollout groups: images that share a workload move together (a failure of that workload fails
// all of them), images that share none are independent and may roll out side by side. A group is
// a connected component of the images linked by their target workloads. Pure, no imports but the
// workload vocabulary: the tick's plan groups the images due, `validate` and the deadline rule
// every image that can be due.
import { type WorkloadRef, workloadId } from "./workload.ts";

export interface GroupedImage {
  key: string;
  targets: ReadonlyArray<WorkloadRef>;
}

export interface ImageGroup {
  /** Image keys, in config order. */
  images: string[];
  /** Distinct workload ids of their targets, in the order they first appear in the config. */
  workloads: string[];
}

/**
 * The groups, numbered in the config order of each group's first image. One pass over the
 * targets with a union-find: comparing every image with every other made 200 images cost 40,000
 * sets of workload ids and 10 MB at 500 workloads.
 */
export function imageGroups(images: readonly GroupedImage[]): ImageGroup[] {
  const parent = images.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) {
      const up = parent[parent[i] as number] as number;
      parent[i] = up;
      i = up;
    }
    return i;
  };
  const owner = new Map<string, number>();
  images.forEach((img, i) => {
    for (const t of img.targets) {
      const id = workloadId(t);
      const first = owner.get(id);
      if (first === undefined) owner.set(id, i);
      else {
        const [a, b] = [root(first), root(i)];
        if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
      }
    }
  });
  // Numbered as their first image comes in config order, whichever image is a group's root.
  const byRoot = new Map<number, ImageGroup>();
  images.forEach((img, i) => {
    const r = root(i);
    const g = byRoot.get(r) ?? { images: [], workloads: [] };
    byRoot.set(r, g);
    g.images.push(img.key);
  });
  for (const [id, i] of owner) byRoot.get(root(i))?.workloads.push(id);
  return [...byRoot.values()];
}

/** Each image's group number (its index in imageGroups). */
export function groupOf(groups: readonly ImageGroup[]): Map<string, number> {
  return new Map(groups.flatMap((g, n) => g.images.map((key) => [key, n] as const)));
}
