// Independent images roll out side by side: images that share no workload are groups, up to
// `parallelism` groups roll out at once, and inside a group one workload at a time in config
// order. The simulated controllers record every rollout (start and end in one sequence), so
// overlap is judged from what the cluster saw, not from a clock. Where overlap must be seen, the
// workloads' rollouts are held (slow mode) until the test has seen enough of them in flight, then
// released: a product that rolls out one group at a time never gets there, and the test fails.
import { describe, expect, test } from "bun:test";
import type { RolloutRecord } from "../../sim/apiserver/index.ts";
import { startCollector } from "../../sim/collector.ts";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";
import { runWith } from "../telemetry/e2e.ts";

let w: World;
worldPerTest((world) => {
  w = world;
});

const HELD_MS = 600_000;
const id = (name: string) => `Deployment/apps/${name}`;
const pin = (repo: string, digest: string) => `${w.registry.host}/myorg/${repo}@${digest}`;

/** One Deployment per name, each running its own build of myorg/<repo>; returns each repo's first digest. */
function seed(workloads: Record<string, string[]>): Record<string, string> {
  const digests: Record<string, string> = {};
  for (const [name, repos] of Object.entries(workloads)) {
    for (const repo of repos) digests[repo] ??= w.registry.push(`myorg/${repo}`, "stable");
    w.api.addWorkload({
      kind: "Deployment",
      namespace: "apps",
      name,
      containers: repos.map((repo) => ({ name: repo, image: pin(repo, digests[repo] as string) })),
    });
  }
  return digests;
}

/** The config's images: each repo with its targets (workload names, container named as the repo). */
function configure(images: Record<string, string[]>, settings: Record<string, unknown> = {}): void {
  w.writeConfig((c) => {
    delete c.state;
    c.images = Object.entries(images).map(([repo, names]) => ({
      repository: `myorg/${repo}`,
      targets: names.map((name) => ({ kind: "Deployment", name, container: repo })),
    }));
    Object.assign(c, { rolloutTimeout: "60s", ...settings });
  });
}

/** Holds every rollout of these workloads until release(). */
const hold = (names: string[]) => {
  for (const n of names) w.api.setMode("Deployment", "apps", n, "slow", { slowMs: HELD_MS });
};
const release = (names: string[]) => {
  for (const n of names) w.api.setMode("Deployment", "apps", n, "healthy");
};

const ours = (names: string[]) => w.api.rollouts.filter((r) => names.map(id).includes(r.workload));
const open = (names: string[]) => ours(names).filter((r) => r.end === undefined);

/** The most rollouts in flight at once among these records (ends and starts in sequence order). */
function mostAtOnce(records: readonly RolloutRecord[]): number {
  const marks = records.flatMap((r) => [
    [r.start, 1],
    [r.end ?? Number.POSITIVE_INFINITY, -1],
  ]);
  marks.sort((a, b) => (a[0] as number) - (b[0] as number));
  let now = 0;
  let most = 0;
  for (const [, d] of marks) {
    now += d as number;
    most = Math.max(most, now);
  }
  return most;
}

/** Waits until `ok()`; fails with what the cluster saw after `ms`. */
async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline)
      throw new Error(`Timed out waiting for ${what}; rollouts: ${JSON.stringify(w.api.rollouts)}`);
    await Bun.sleep(5);
  }
}

describe("independent images roll out side by side", () => {
  const names = ["s1", "s2", "s3", "s4", "s5", "s6"];
  const images = Object.fromEntries(names.map((n) => [n, [n]]));

  test("six images, parallelism 4: four rollouts in flight at once, never five; all refreshed", async () => {
    seed(Object.fromEntries(names.map((n) => [n, [n]])));
    configure(images, { parallelism: 4 });
    await recorded(w);
    const next = Object.fromEntries(names.map((n) => [n, w.registry.push(`myorg/${n}`, "stable")]));
    hold(names);
    const before = w.api.rollouts.length;
    const tick = w.run();
    await until("four rollouts in flight", () => open(names).length >= 4);
    release(names);
    const r = await tick;
    expect(r.code).toBe(0);
    const mine = w.api.rollouts.slice(before);
    expect(mine.map((x) => x.workload).sort()).toEqual(names.map(id).sort());
    expect(mostAtOnce(mine)).toBe(4);
    for (const n of names) {
      expect(w.image("Deployment", "apps", n, n)).toBe(pin(n, next[n] as string));
      expect(w.ours()[storeKey(`last-refreshed-${n}-digest`)]).toBe(next[n]);
    }
    // Each lane's lines say which group they belong to (1 to 6, in config order).
    for (const [i, n] of names.entries())
      expect(r.stderr).toMatch(new RegExp(`patched Deployment apps/${n}: .* group=${i + 1}\\b`));
  }, 60_000);

  test("parallelism 1: one rollout at a time, in config order; each wait's span names its group", async () => {
    seed(Object.fromEntries(names.map((n) => [n, [n]])));
    configure(images, { parallelism: 1 });
    await recorded(w);
    for (const n of names) w.registry.push(`myorg/${n}`, "stable");
    const before = w.api.rollouts.length;
    const c = startCollector();
    try {
      const r = await runWith(w, c, "http/json");
      expect(r.code).toBe(0);
      const mine = w.api.rollouts.slice(before);
      expect(mine.map((x) => x.workload)).toEqual(names.map(id));
      expect(mostAtOnce(mine)).toBe(1);
      for (const span of ["rollout.wait", "rollout.verify"]) {
        const seen = r.spans
          .filter((x) => x.name === span)
          .map((x) => `${x.attributes["k8s.deployment.name"]} ${x.attributes["image_refresh.group"]}`);
        expect(seen).toEqual(names.map((n, i) => `${n} ${i + 1}`));
      }
    } finally {
      await c.stop();
    }
  }, 60_000);
});

describe("a group moves as one", () => {
  test("two images sharing a workload: its workloads one at a time, in config order, beside another group", async () => {
    // a and b share `shared`: one group, rolled out a-only, shared, b-only. c is a group of its own.
    seed({ "a-only": ["a"], shared: ["a", "b"], "b-only": ["b"], "c-only": ["c"] });
    configure({ a: ["a-only", "shared"], b: ["shared", "b-only"], c: ["c-only"] });
    await recorded(w);
    for (const repo of ["a", "b", "c"]) w.registry.push(`myorg/${repo}`, "stable");
    const group = ["a-only", "shared", "b-only"];
    // Slow enough that a group's workloads rolled out together could not miss each other.
    for (const n of group) w.api.setMode("Deployment", "apps", n, "slow", { slowMs: 300 });
    hold(["c-only"]);
    const before = w.api.rollouts.length;
    const tick = w.run();
    // c rolls out beside the group: held until the group's first rollout is in flight.
    await until("the group's first rollout and c in flight", () => open(["a-only", "c-only"]).length === 2);
    release(["c-only"]);
    const r = await tick;
    expect(r.code).toBe(0);
    const mine = w.api.rollouts.slice(before);
    const inGroup = mine.filter((x) => group.map(id).includes(x.workload));
    expect(inGroup.map((x) => x.workload)).toEqual(group.map(id));
    expect(mostAtOnce(inGroup)).toBe(1);
    expect(r.stderr).toContain("a: refreshed; b: refreshed; c: refreshed");
  }, 60_000);

  test("one group fails and is reverted; the others are refreshed, their counts reset", async () => {
    const first = seed({ "a-only": ["a"], "b-only": ["b"], "c-only": ["c"] });
    configure({ a: ["a-only"], b: ["b-only"], c: ["c-only"] });
    await recorded(w);
    const next = Object.fromEntries(
      ["a", "b", "c"].map((repo) => [repo, w.registry.push(`myorg/${repo}`, "stable")]),
    );
    w.api.failImages("Deployment", "apps", "b-only", [pin("b", next.b as string)], "crashloop");
    hold(["a-only", "c-only"]);
    const tick = w.run();
    // a and c are held in flight until b's failure has been reverted: one group's failure
    // neither waits for nor touches the others.
    await until(
      "b's revert while a and c are in flight",
      () => ours(["b-only"]).length === 2 && ours(["b-only"]).every((x) => x.end !== undefined),
    );
    expect(open(["a-only", "c-only"]).length).toBe(2);
    release(["a-only", "c-only"]);
    const r = await tick;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("a: refreshed; b: failed (reverted); c: refreshed");
    expect(w.image("Deployment", "apps", "b-only", "b")).toBe(pin("b", first.b as string));
    for (const repo of ["a", "c"]) {
      expect(w.image("Deployment", "apps", `${repo}-only`, repo)).toBe(pin(repo, next[repo] as string));
      expect(w.ours()[storeKey(`refresh-attempt-${repo}`)]).toBeUndefined();
    }
    expect(w.ours()[storeKey("refresh-attempt-b")]).toBe("1");
    expect(w.ours()[storeKey("failed-b-digest")]).toBe(next.b);
    const events = w.api.events.map((e) => `${e.reason} ${e.regarding?.name}`);
    // Each group's Events about its own workloads only.
    expect(events).toEqual([
      "RolloutFailed b-only",
      "RolloutReverted b-only",
      "Refreshed a-only",
      "Refreshed c-only",
    ]);
    expect(r.stderr).toMatch(/reverting Deployment apps\/b-only: .* group=2\b/);
  }, 60_000);

  test("two groups failing at once: each reverted with its own count, failed build and Events", async () => {
    const first = seed({ "a-only": ["a"], "b-only": ["b"], "c-only": ["c"] });
    configure({ a: ["a-only"], b: ["b-only"], c: ["c-only"] });
    await recorded(w);
    const next = Object.fromEntries(
      ["a", "b", "c"].map((repo) => [repo, w.registry.push(`myorg/${repo}`, "stable")]),
    );
    for (const repo of ["a", "c"])
      w.api.failImages("Deployment", "apps", `${repo}-only`, [pin(repo, next[repo] as string)], "crashloop");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("a: failed (reverted); b: refreshed; c: failed (reverted)");
    for (const repo of ["a", "c"]) {
      expect(w.image("Deployment", "apps", `${repo}-only`, repo)).toBe(pin(repo, first[repo] as string));
      expect(w.ours()[storeKey(`refresh-attempt-${repo}`)]).toBe("1");
      expect(w.ours()[storeKey(`failed-${repo}-digest`)]).toBe(next[repo]);
    }
    expect(w.ours()[storeKey("refresh-attempt-b")]).toBeUndefined();
    expect(w.ours()[storeKey("last-refreshed-b-digest")]).toBe(next.b);
    const events = w.api.events.map((e) => `${e.reason} ${e.regarding?.name}`).sort();
    expect(events).toEqual([
      "Refreshed b-only",
      "RolloutFailed a-only",
      "RolloutFailed c-only",
      "RolloutReverted a-only",
      "RolloutReverted c-only",
    ]);
    // The lanes' store writes took turns: neither lost a compare-and-swap to the other.
    expect(r.stderr).not.toContain("changed concurrently");
  }, 60_000);
});
