// The tick's invariants under random histories: digest pushes, rollout outcomes per
// workload, one API and one registry fault per tick on a random request, an image its registry
// cannot resolve, human re-arms and hand-edited counters, and a story that may begin with the
// legacy single counter on the `state` workload. The real tick runs in-process against the
// simulators over HTTPS; after every tick the request logs, the store and the legacy
// annotations are checked against checks.ts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { parseWorkload } from "../../lib/kube/objects.ts";
import { rolloutStatus } from "../../lib/kube/settled.ts";
import type { ControllerMode } from "../../sim/apiserver/index.ts";
import type { Fault } from "../../sim/faults.ts";
import { untrustedCounter } from "./arbitraries.ts";
import { type Before, checkTick, newStory, type Story } from "./checks.ts";
import {
  IMAGE_KEYS,
  type InProcessWorld,
  MAX_ATTEMPTS,
  nthRequestFault,
  PREFIX,
  STORE_PATH,
  startInProcessWorld,
  TARGETS,
  WORKLOADS,
} from "./inprocess.ts";

const RUNS = Number(process.env.TICK_PROPERTY_RUNS ?? 30);
// A fixed seed by default, so that CI explores the same histories every run and the reachability
// check below cannot flake; TICK_PROPERTY_SEED=random (or a number) explores others.
const SEED_ENV = process.env.TICK_PROPERTY_SEED;
const SEED = SEED_ENV === "random" ? undefined : Number(SEED_ENV ?? 1);
const seen = new Set<string>();
const reasons = new Set<string>();
/** Each image's verdict, as the tick's last line lists them. */
const imageVerdicts = new Set<string>();

let w: InProcessWorld;
beforeAll(async () => {
  w = await startInProcessWorld();
});
afterAll(async () => {
  await w?.stop();
});

const faultArb: fc.Arbitrary<Fault> = fc.oneof(
  fc.constantFrom(500, 409, 503).map((code) => ({ type: "status" as const, code })),
  fc.constant({ type: "hang" as const }),
  fc.constant({ type: "reset" as const }),
);
const modeArb: fc.Arbitrary<ControllerMode> = fc.oneof(
  { weight: 5, arbitrary: fc.constant("healthy" as const) },
  { weight: 1, arbitrary: fc.constant("flap" as const) },
  { weight: 1, arbitrary: fc.constant("deadline" as const) },
  // the settled guard of the images of that workload; once patched, a rollout that never completes
  { weight: 1, arbitrary: fc.constant("unsettled" as const) },
);
const countArb = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }).map(String) },
  { weight: 1, arbitrary: untrustedCounter },
);
/** Every target container, with its image key. */
const TOUCHABLE = IMAGE_KEYS.flatMap((key) => (TARGETS[key] ?? []).map((t) => ({ key, ...t })));
const stepArb = fc.record({
  push: fc.constantFrom(undefined, undefined, "api", "node-agent", "sidecar"),
  modes: fc.tuple(...WORKLOADS.map(() => modeArb)),
  apiFault: fc.option(
    fc.record({
      method: fc.constantFrom("GET", "PATCH", "PATCH", "POST"),
      nth: fc.integer({ min: 1, max: 4 }),
      fault: faultArb,
    }),
    { freq: 3 },
  ),
  registryFault: fc.option(
    fc.record({
      nth: fc.integer({ min: 1, max: 4 }),
      fault: fc.oneof(faultArb, fc.constant({ type: "status" as const, code: 429 })),
    }),
    { freq: 6 },
  ),
  // the registry answers 404 for one repository all tick: that image is unresolved
  unresolve: fc.oneof(
    { weight: 4, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom(...IMAGE_KEYS) },
  ),
  // a human writes an image's counter by hand
  scribble: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.record({ key: fc.constantFrom(...IMAGE_KEYS), value: countArb }) },
  ),
  // someone else writes a target container's image: a deploy tool renders the tag over the pin,
  // a human pins another build or tag, a config points at a container of another repository, or
  // the human hands the container back with the floating tag (the command a pause prints)
  touch: fc.oneof(
    { weight: 6, arbitrary: fc.constant(null) },
    {
      weight: 3,
      arbitrary: fc.record({
        target: fc.constantFrom(...TOUCHABLE),
        what: fc.constantFrom(
          "rerender",
          "rerender",
          "human_digest",
          "human_tag",
          "other_repo",
          "other_repo_tag",
          "handback",
          "handback",
        ),
      }),
    },
  ),
  rearm: fc.oneof(
    { weight: 7, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant([] as string[]) },
    { weight: 1, arbitrary: fc.constantFrom(...IMAGE_KEYS).map((key) => [key]) },
  ),
});
/**
 * A calm tick: every controller healthy, no fault, nobody else writing. With the settled guard
 * per image one unsettled workload skips its images, and a 429's Retry-After holds the registry
 * for the rest of a story, so histories need calm ticks to reach noop and the pauses.
 */
const calmArb = stepArb.map((s) => ({
  ...s,
  push: undefined,
  modes: WORKLOADS.map(() => "healthy" as ControllerMode) as unknown as typeof s.modes,
  apiFault: null,
  registryFault: null,
  unresolve: null,
  scribble: null,
  touch: s.touch?.what === "handback" ? s.touch : null,
}));
/** A calm tick on which a human sets an image's count at the maximum by hand and a build of it lands. */
const atMaxArb = fc
  .tuple(calmArb, fc.constantFrom("api", "node-agent", "sidecar" as const))
  .map(([s, key]) => ({ ...s, push: key, scribble: { key, value: String(MAX_ATTEMPTS) } }));
const anyStepArb = fc.oneof(
  { weight: 6, arbitrary: stepArb },
  { weight: 3, arbitrary: calmArb },
  { weight: 1, arbitrary: atMaxArb },
);

/** The story may begin where the earlier single-counter version left off. */
const legacyArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.record({
      prefix: fc.constantFrom(PREFIX, "tracebloc.io"),
      // an installation that changed its prefix: the counter under both
      both: fc.boolean(),
      attempt: countArb,
      flap: fc.option(fc.constant("2"), { nil: undefined }),
    }),
  },
);

function snapshot(modes: readonly ControllerMode[]): Before {
  const live = Object.fromEntries(
    WORKLOADS.map((x) => [
      x.name,
      w.api
        .getObject(x.kind, x.namespace, x.name)
        .spec.template.spec.containers.map((ct: { name: string; image: string }) => ({
          name: ct.name,
          image: ct.image,
        })),
    ]),
  );
  const settled = Object.fromEntries(
    WORKLOADS.map((x, i) => [
      x.name,
      (modes[i] ?? "healthy") === "healthy" &&
        rolloutStatus(parseWorkload(x.kind, w.api.getObject(x.kind, x.namespace, x.name))).done,
    ]),
  );
  const unsettled = Object.fromEntries(
    WORKLOADS.map((x, i) => [
      x.name,
      (modes[i] ?? "healthy") !== "healthy" &&
        !rolloutStatus(parseWorkload(x.kind, w.api.getObject(x.kind, x.namespace, x.name))).done,
    ]),
  );
  return {
    unsettled,
    book: w.book(),
    annotations: { ...w.annotations() },
    current: { ...w.current },
    live,
    settled,
    modes: Object.fromEntries(WORKLOADS.map((x, i) => [x.name, modes[i] ?? "healthy"])),
  };
}

/** Whether a workload settles by kubectl's rules within a second. */
async function settled(x: (typeof WORKLOADS)[number]): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (rolloutStatus(parseWorkload(x.kind, w.api.getObject(x.kind, x.namespace, x.name))).done) return true;
    await Bun.sleep(10);
  }
  return false;
}

type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;
/** Store keys carry no prefix; the legacy annotations do. */
const k = (name: string) => name;
function startStory(legacy: ValueOf<typeof legacyArb>): void {
  w.reset();
  if (!legacy) return;
  const p = legacy.prefix;
  w.setLegacy({
    [`${p}/refresh-attempt`]: legacy.attempt,
    [`${p}/refresh-flap-detected`]: legacy.flap ?? null,
  });
  if (legacy.both)
    w.setLegacy({
      [`${p === PREFIX ? "tracebloc.io" : PREFIX}/refresh-attempt`]: "1",
    });
}

test("every tick of a random history keeps the tick's invariants", async () => {
  await fc.assert(
    fc.asyncProperty(
      legacyArb,
      gitopsArb,
      fc.array(anyStepArb, { minLength: 3, maxLength: 7 }),
      async (legacy, gitops, steps) => {
        startStory(legacy);
        const story = newStory();
        story.gitops = gitops;
        // The first tick records the digests, so later pushes are changes; it is checked too.
        const first = snapshot([]);
        const tick0 = await w.tick();
        checkTick(w, {
          before: first,
          tick: tick0,
          story,
          faults: { api: false, registry: false, unresolved: false },
        });
        for (const s of steps) await step(s, story);
      },
    ),
    { numRuns: RUNS, endOnFailure: true, ...(SEED === undefined ? {} : { seed: SEED }) },
  );
  // Not vacuous: the histories reach, per image (the settled guard is per image: an image
  // skipped while the others go on), the verdicts the invariants are about
  for (const o of [
    "refreshed",
    "failed",
    "skipped",
    "frozen",
    "noop",
    "locked_out",
    "unresolved",
    "stale",
    "held",
    "paused",
  ])
    expect(imageVerdicts).toContain(o);
  expect(seen).toContain("noop");
  // and the live spec's verdicts
  for (const r of ["pin_restored", "pin_contested", "pinned_by_human", "target_mismatch"])
    expect(reasons).toContain(r);
}, 240_000);

/** The image a touch writes, and the field manager that writes it (as kubectl, Helm, Argo CD name themselves). */
function touched(t: NonNullable<ValueOf<typeof stepArb>["touch"]>): [string, string] {
  const repo = `${w.registry.host}/myorg/${t.target.key}`;
  if (t.what === "rerender") return [`${repo}:stable`, "helm"];
  if (t.what === "human_digest") return [`${repo}@sha256:${"9".repeat(64)}`, "kubectl-set"];
  if (t.what === "human_tag") return [`${repo}:1.4.2`, "kubectl-set"];
  if (t.what === "other_repo") return ["envoy:1", "argocd-controller"];
  // the floating tag, of another repository on the same registry
  if (t.what === "other_repo_tag") return [`${w.registry.host}/myorg/other:stable`, "helm"];
  return [`${repo}:stable`, "kubectl-set"];
}

/**
 * Some stories have a GitOps-like tool that renders the floating tag back over one container
 * before every tick, as Argo CD's self-heal does: one re-pin, then a contest, never a loop.
 */
const gitopsArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom(...TOUCHABLE) },
);

async function step(s: ValueOf<typeof stepArb>, story: Story): Promise<void> {
  w.api.faults.clear();
  w.registry.faults.clear();
  if (s.rearm) {
    await w.rearm(s.rearm);
    // a re-arm removes the repin streaks too: the next re-render may be re-pinned again
    for (const key of s.rearm.length ? s.rearm : IMAGE_KEYS) story.repinArmed[key] = true;
  }
  if (s.touch) {
    const [image, manager] = touched(s.touch);
    expect(await w.setImage(s.touch.target.w, s.touch.target.container, image, manager)).toBe(200);
  }
  const g = story.gitops as (typeof TOUCHABLE)[number] | undefined;
  if (g) {
    const image = `${w.registry.host}/myorg/${g.key}:stable`;
    expect(await w.setImage(g.w, g.container, image, "argocd-controller")).toBe(200);
  }
  // in the store, as `kubectl edit configmap` does
  if (s.scribble)
    w.setBook({
      [`refresh-attempt-${s.scribble.key}`]: s.scribble.value,
    });
  if (s.push === "api") w.current.api = w.registry.push("myorg/api", "stable");
  if (s.push === "sidecar") w.current.sidecar = w.registry.push("myorg/sidecar", "stable");
  if (s.push === "node-agent")
    w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
  WORKLOADS.forEach((x, i) => {
    w.api.setMode(x.kind, x.namespace, x.name, s.modes[i] ?? "healthy");
  });
  if (s.apiFault) w.api.faults.add(nthRequestFault(s.apiFault.method, s.apiFault.nth, s.apiFault.fault));
  if (s.registryFault)
    w.registry.faults.add(nthRequestFault(undefined, s.registryFault.nth, s.registryFault.fault));
  if (s.unresolve)
    w.registry.faults.add({
      method: "HEAD",
      path: `/v2/myorg/${s.unresolve}/manifests/stable`,
      fault: { type: "status", code: 404 },
    });
  // the minutes between two CronJob ticks: a healthy controller finishes what it was rolling out
  await Bun.sleep(30);
  await Promise.all(
    WORKLOADS.filter((_, i) => (s.modes[i] ?? "healthy") === "healthy").map((x) => settled(x)),
  );
  const before = snapshot(s.modes);
  w.api.clearLog();
  w.registry.clearLog();
  w.lines.length = 0;
  const tick = await w.tick();
  const faults = {
    api: Boolean(s.apiFault),
    registry: Boolean(s.registryFault),
    unresolved: Boolean(s.unresolve),
  };
  checkTick(w, { before, tick, story, faults });
  seen.add(tick.result.outcome);
  for (const m of tick.result.message.matchAll(/(?:^|; )([a-z-]+): ([a-z_]+)/g))
    imageVerdicts.add(m[2] as string);
  reasons.add(tick.result.reason);
  for (const l of w.lines)
    for (const m of l.matchAll(/ image=\S+ outcome=\S+ reason=(\S+)/g)) reasons.add(m[1] as string);
}

test("a healthy, unchanged installation writes nothing, tick after tick", async () => {
  w.reset();
  expect((await w.tick()).result.outcome).toBe("recorded");
  for (let i = 0; i < 5; i++) {
    // The record PATCH moved the generation; give the controller its step to observe it, as
    // the minutes between two CronJob ticks do, or the tick finds it not settled.
    await Bun.sleep(30);
    w.api.clearLog();
    const { result } = await w.tick();
    expect(result.outcome).toBe("noop");
    // the store and each distinct target workload once, concurrently; nothing written
    expect(w.api.log.map((e) => `${e.method} ${e.path}`).sort()).toEqual([
      `GET ${STORE_PATH}`,
      "GET /apis/apps/v1/namespaces/agents/daemonsets/node-agent",
      "GET /apis/apps/v1/namespaces/apps/deployments/api",
      "GET /apis/apps/v1/namespaces/apps/deployments/api-proxy",
    ]);
  }
});

/** One tick under the checks of checks.ts, with no fault injected. */
async function checkedTick(story: Story, modes: ControllerMode[] = []): Promise<string> {
  WORKLOADS.forEach((x, i) => {
    w.api.setMode(x.kind, x.namespace, x.name, modes[i] ?? "healthy");
  });
  await Bun.sleep(30);
  const before = snapshot(modes);
  w.api.clearLog();
  w.registry.clearLog();
  w.lines.length = 0;
  const tick = await w.tick();
  checkTick(w, { before, tick, story, faults: { api: false, registry: false, unresolved: false } });
  return w.lines.at(-1) ?? "";
}

/** Waits (up to a second) until a workload is settled by kubectl's rules. */
async function settle(x: (typeof WORKLOADS)[number]): Promise<void> {
  if (!(await settled(x))) throw new Error(`${x.name} did not settle`);
}

test("a flapping workload beside a healthy one: the healthy image is refreshed, reset and recorded, tick after tick", async () => {
  w.reset();
  const story = newStory();
  await checkedTick(story);
  const flapProxy: ControllerMode[] = ["healthy", "flap", "healthy"];
  const proxy = WORKLOADS[1];
  for (let attempt = 1; attempt <= 2; attempt++) {
    w.current.api = w.registry.push("myorg/api", "stable");
    w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const line = await checkedTick(story, flapProxy);
    // The failure that reaches the maximum (2) announces the lockout on its own tick.
    const verdict = attempt < 2 ? "failed" : "locked_out";
    expect(line).toContain(`${verdict}: `);
    expect(line).toContain(`api: ${verdict}`);
    expect(line).toContain("node-agent: refreshed");
    const a = w.book();
    expect(a[k("refresh-attempt-api")]).toBe(String(attempt));
    expect(a[k("failed-api-digest")]).toBe(w.current.api as string);
    expect(a[k("refresh-attempt-node-agent")]).toBeUndefined();
    expect(a[k("last-refreshed-node-agent-digest")]).toBe(w.current["node-agent"] as string);
    expect(a[k("last-refreshed-api-digest")]).not.toBe(w.current.api as string);
    // the flapping workload does not settle: api is skipped (its count kept), node-agent goes on
    w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const skipped = await checkedTick(story, flapProxy);
    expect(skipped).toContain("api: skipped 1/3");
    expect(skipped).toContain("node-agent: refreshed");
    expect(w.book()[k("refresh-attempt-api")]).toBe(String(attempt));
    w.api.setMode(proxy.kind, proxy.namespace, proxy.name, "healthy");
    await settle(proxy);
  }
  // api is locked out now; its lockout stops neither node-agent's refresh nor its record.
  w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
  const line = await checkedTick(story, flapProxy);
  expect(line).toContain("locked_out: ");
  expect(line).toContain("api: locked_out 2/2");
  expect(line).toContain("sidecar: noop");
  expect(line).toContain("node-agent: refreshed");
  expect(w.book()[k("refresh-flap-detected-api")]).toBe("2");
  expect(w.book()[k("skip-streak-api")]).toBeUndefined();
  expect(w.book()[k("last-refreshed-node-agent-digest")]).toBe(w.current["node-agent"] as string);
}, 30_000);

const legacyLeft = () => Object.keys(w.annotations()).filter((name) => /\/refresh-(attempt|flap)/.test(name));

test("a legacy lockout counts for every image: the first write carries it into the store, and the annotations go", async () => {
  startStory({ prefix: "tracebloc.io", both: false, attempt: "2", flap: "2" });
  const story = newStory();
  // the first observation's record is the first write: the migration rides with it
  expect(await checkedTick(story)).toContain("recorded");
  for (const key of IMAGE_KEYS) {
    expect(w.book()[`refresh-attempt-${key}`]).toBe("2");
    expect(w.book()[`refresh-flap-detected-${key}`]).toBe("2");
  }
  expect(legacyLeft()).toEqual([]);
  w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
  expect(await checkedTick(story)).toContain("node-agent: locked_out 2/2");
  // rearm node-agent: api and sidecar keep the carried-over count as their own
  expect(await w.rearm(["node-agent"])).toBe(0);
  const a = w.book();
  expect(a["refresh-attempt-api"]).toBe("2");
  expect(a["refresh-attempt-sidecar"]).toBe("2");
  expect(a["refresh-attempt-node-agent"]).toBeUndefined();
  expect(await checkedTick(story)).toContain("node-agent: refreshed");
  w.current.sidecar = w.registry.push("myorg/sidecar", "stable");
  expect(await checkedTick(story)).toContain("sidecar: locked_out 2/2");
  expect(legacyLeft()).toEqual([]);
}, 30_000);

test("legacy keys under two prefixes: the configured prefix's count is carried over, and every one goes", async () => {
  // the configured prefix's legacy count wins; the other one must go all the same
  startStory({ prefix: "tracebloc.io", both: true, attempt: "2", flap: undefined });
  const story = newStory();
  await checkedTick(story);
  for (const key of IMAGE_KEYS) expect(w.book()[`refresh-attempt-${key}`]).toBe("1");
  expect(legacyLeft()).toEqual([]);
  for (let i = 0; i < 2; i++) {
    w.current["node-agent"] = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    expect(await checkedTick(story)).toContain("node-agent: refreshed");
    expect(legacyLeft()).toEqual([]);
  }
  expect(w.book()["refresh-attempt-api"]).toBe("1");
}, 30_000);
