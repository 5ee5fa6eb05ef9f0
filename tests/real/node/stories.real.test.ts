// The stories of bad builds and rough handling on real pods, judged by the product's own image as
// the chart's CronJob (each tick a Job made from it): a build that never becomes Ready; a build
// the kubelet cannot pull, failing fast; a DaemonSet and a StatefulSet refreshed by the real
// controllers; the tick's Job killed by its activeDeadlineSeconds in the middle of a rollout; and
// the new pods deleted while the tick verifies them. One cluster for the file; each image has a
// workload of its own, so one story's trouble leaves the others' images untouched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ok } from "../kubectl.ts";
import { list, namespace } from "../manifests.ts";
import { type NodeCluster, startNodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";
import { needNode } from "./gate.ts";
import {
  finished,
  installProduct,
  type Product,
  productConfig,
  productEvents,
  RELEASE_NS,
  type Tick,
} from "./product.ts";
import { server, serverDeployment } from "./workloads.ts";

const missing = needNode("tests/real/node/stories.real.test.ts", ["helm4"]);
const APPS = "apps";
const STORE = "image-refresh-state";
const ROLLOUT_TIMEOUT_S = 30;
const VERIFY_FOR_S = 10;
const repo = (name: string) => `${APPS}/${name}`;
const tagged = (name: string) => `${REGISTRY_HOST}/${repo(name)}:stable`;
const pinned = (name: string, digest: string) => `${REGISTRY_HOST}/${repo(name)}@${digest}`;
const said = (t: Tick) => [t.exitCode, t.outcome, t.exitCode === 0 ? "" : t.log];
/** The tick's lines about one image's failure, e.g. its RolloutFailed message. */
const errorsOf = (t: Tick) =>
  t.lines
    .filter((l) => l.level === "error" || l.level === "warn")
    .map((l) => String(l.msg))
    .join("\n");

type Obj = Record<string, unknown>;
type Kind = "Deployment" | "DaemonSet" | "StatefulSet";
const PATH: Record<Kind, string> = {
  Deployment: "deployments",
  DaemonSet: "daemonsets",
  StatefulSet: "statefulsets",
};

function workload(kind: "DaemonSet" | "StatefulSet", name: string, image: string): Obj {
  const template = {
    metadata: { labels: { app: name } },
    spec: { containers: [server(name, image)], terminationGracePeriodSeconds: 2 },
  };
  const spec: Obj = { selector: { matchLabels: { app: name } }, template };
  if (kind === "StatefulSet") Object.assign(spec, { replicas: 1, serviceName: name });
  return { apiVersion: "apps/v1", kind, metadata: { name, namespace: APPS, labels: { app: name } }, spec };
}

/** Each story's image and its workloads; `pair` has a DaemonSet and a StatefulSet. */
const DEPLOYMENTS = { never: 1, pull: 1, slow: 1, gone: 2 } as const;
const IMAGES: Record<string, Array<{ kind: Kind; name: string }>> = {
  never: [{ kind: "Deployment", name: "never" }],
  pull: [{ kind: "Deployment", name: "pull" }],
  pair: [
    { kind: "DaemonSet", name: "pair-ds" },
    { kind: "StatefulSet", name: "pair-sts" },
  ],
  slow: [{ kind: "Deployment", name: "slow" }],
  gone: [{ kind: "Deployment", name: "gone" }],
};

describe.skipIf(missing)("bad builds and rough handling on real pods, judged by the product", () => {
  let c: NodeCluster;
  let p: Product;
  const good: Record<string, string> = {};
  beforeAll(async () => {
    c = await startNodeCluster({ crashLoopMax: "5s" });
    for (const n of Object.keys(IMAGES))
      good[n] = await c.images.server(repo(n), "stable", { mode: "ready" });
    const items = [
      ...Object.entries(DEPLOYMENTS).map(([n, r]) => serverDeployment(APPS, n, tagged(n), r)),
      workload("DaemonSet", "pair-ds", tagged("pair")),
      workload("StatefulSet", "pair-sts", tagged("pair")),
    ];
    await ok(c.kubectl(["apply", "-f", "-"], { stdin: list([namespace(APPS), ...items]) }), "apply");
    const images = Object.entries(IMAGES).map(([n, ws]) => ({
      repository: repo(n),
      targets: ws.map((w) => ({ kind: w.kind, namespace: APPS, name: w.name, container: w.name })),
    }));
    p = await installProduct(
      c,
      productConfig(images, {
        namespace: APPS,
        rolloutTimeout: `${ROLLOUT_TIMEOUT_S}s`,
        verifyFor: `${VERIFY_FOR_S}s`,
        regressionWindow: "10m",
        maxRefreshAttempts: 3,
      }),
    );
    for (const ws of Object.values(IMAGES))
      for (const w of ws)
        await ok(
          c.kubectl(["rollout", "status", `${w.kind.toLowerCase()}/${w.name}`, "-n", APPS, "--timeout=120s"]),
          w.name,
        );
    // First observation, then adoption: every workload pinned to its good build.
    expect(said(await p.tick())).toEqual([0, "recorded", ""]);
    expect(said(await p.tick())).toEqual([0, "refreshed", ""]);
    for (const [n, ws] of Object.entries(IMAGES))
      for (const w of ws) expect(await image(w.kind, w.name)).toBe(pinned(n, good[n] as string));
  }, 600_000);
  afterAll(async () => {
    await c?.stop();
  });

  async function get(kind: Kind, name: string) {
    return await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/${PATH[kind]}/${name}`);
  }
  async function image(kind: Kind, name: string): Promise<string> {
    return (await get(kind, name)).spec.template.spec.containers[0].image;
  }
  async function store(): Promise<Record<string, string>> {
    return (await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/configmaps/${STORE}`)).data ?? {};
  }
  interface PodView {
    name: string;
    image: string;
    ready: boolean;
    imageID: string;
    restarts: number;
    waiting?: string;
    deleting: boolean;
  }
  async function pods(app: string): Promise<PodView[]> {
    const l = await c.admin.get(`/api/v1/namespaces/${APPS}/pods?labelSelector=app%3D${app}`);
    // biome-ignore lint/suspicious/noExplicitAny: pods read loosely
    return l.items.map((x: any) => {
      const s = x.status?.containerStatuses?.[0] ?? {};
      return {
        name: x.metadata.name,
        image: x.spec.containers[0].image,
        ready: s.ready === true,
        imageID: String(s.imageID ?? ""),
        restarts: s.restartCount ?? 0,
        ...(s.state?.waiting?.reason ? { waiting: s.state.waiting.reason } : {}),
        deleting: Boolean(x.metadata.deletionTimestamp),
      };
    });
  }
  /** Every pod of `app` runs `digest`, Ready, `count` of them; waits up to 90 s. */
  async function allOn(app: string, digest: string, count: number): Promise<void> {
    let last: PodView[] = [];
    for (let i = 0; i < 180; i++) {
      last = await pods(app);
      if (last.length === count && last.every((x) => x.ready && x.imageID.endsWith(digest) && !x.deleting))
        return;
      await Bun.sleep(500);
    }
    throw new Error(`${app}'s pods are not all Ready on ${digest}: ${JSON.stringify(last)}`);
  }
  /** The fix pushed after a failed story: the next tick rolls it out and resets the count. */
  async function fixed(n: string, replicas: number): Promise<string> {
    const fix = await c.images.server(repo(n), "stable", { mode: "ready" });
    expect(said(await p.tick())).toEqual([0, "refreshed", ""]);
    expect(await image("Deployment", n)).toBe(pinned(n, fix));
    await allOn(n, fix, replicas);
    expect((await store())[`refresh-attempt-${n}`]).toBeUndefined();
    return fix;
  }
  /** What the deployment controller says of `name` now: its conditions, type=status reason. */
  async function conditions(name: string): Promise<string[]> {
    const d = await get("Deployment", name);
    // biome-ignore lint/suspicious/noExplicitAny: conditions read loosely
    return (d.status?.conditions ?? []).map((x: any) => `${x.type}=${x.status} ${x.reason}`);
  }

  /**
   * What `app`'s pods show, sampled twice a second until stopped: each change of a pod's Ready,
   * restart count or waiting reason, with the seconds since sampling began (the fidelity figures).
   */
  function sample(app: string): () => Promise<string[]> {
    const t0 = Date.now();
    const last = new Map<string, string>();
    const seen: string[] = [];
    let on = true;
    const loop = (async () => {
      while (on) {
        for (const x of await pods(app).catch(() => [])) {
          const now = `ready=${x.ready} restarts=${x.restarts}${x.waiting ? ` ${x.waiting}` : ""}${x.deleting ? " deleting" : ""}`;
          if (last.get(x.name) !== now)
            seen.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${x.name.slice(-5)} ${now}`);
          last.set(x.name, now);
        }
        await Bun.sleep(500);
      }
    })();
    return async () => {
      on = false;
      await loop;
      return seen;
    };
  }

  test("a build that never becomes Ready: the tick gives up at rolloutTimeout, reverts it, counts 1", async () => {
    const bad = await c.images.server(repo("never"), "stable", { mode: "never" });
    const seen = sample("never");
    const t = await p.tick();
    console.log(`never-ready pods:\n${(await seen()).join("\n")}`);
    expect([t.exitCode, t.outcome]).toEqual([1, "failed"]);
    // Not a crash and not a pull: the new pod ran, unready, until the wait gave up.
    expect(errorsOf(t)).toContain("timed out");
    expect(await image("Deployment", "never")).toBe(pinned("never", good.never as string));
    await allOn("never", good.never as string, 1);
    const s = await store();
    expect([s["refresh-attempt-never"], s["failed-never-digest"]]).toEqual(["1", bad]);
    expect(s["last-attempt-never"]).toStartWith(`${bad} reverted `);
    expect(await productEvents(c)).toContainEqual({
      type: "Warning",
      reason: "RolloutReverted",
      about: `${APPS} Deployment/never`,
    });
    console.log(`never-ready: tick ${t.ms} ms; conditions after: ${(await conditions("never")).join(", ")}`);
    await fixed("never", 1);
  }, 600_000);

  test("a build the kubelet cannot pull fails fast on the new pod's pull error, well before rolloutTimeout, and is reverted", async () => {
    const bad = await c.images.server(repo("pull"), "stable", { mode: "ready" });
    await c.images.breakPulls(repo("pull"), bad);
    const seen = sample("pull");
    const t = await p.tick();
    console.log(`unpullable pods:\n${(await seen()).join("\n")}`);
    expect([t.exitCode, t.outcome]).toEqual([1, "failed"]);
    // The pod's own words, not the rollout's timeout: the wait ended on the evidence.
    expect(errorsOf(t)).toMatch(/cannot pull its image \((ErrImagePull|ImagePullBackOff)\)/);
    expect(errorsOf(t)).not.toContain("timed out");
    expect(await image("Deployment", "pull")).toBe(pinned("pull", good.pull as string));
    await allOn("pull", good.pull as string, 1);
    const s = await store();
    expect([s["refresh-attempt-pull"], s["failed-pull-digest"]]).toEqual(["1", bad]);
    console.log(
      `unpullable: tick ${t.ms} ms (rolloutTimeout ${ROLLOUT_TIMEOUT_S} s, verifyFor ${VERIFY_FOR_S} s)`,
    );
    await fixed("pull", 1);
  }, 600_000);

  test("a DaemonSet and a StatefulSet refreshed to a good build, their status from the real controllers", async () => {
    const build = await c.images.server(repo("pair"), "stable", { mode: "ready" });
    const t = await p.tick();
    expect(said(t)).toEqual([0, "refreshed", ""]);
    for (const w of IMAGES.pair ?? []) expect(await image(w.kind, w.name)).toBe(pinned("pair", build));
    // The tick waited for both: their controllers already report the new revision everywhere.
    const ds = await get("DaemonSet", "pair-ds");
    expect([
      ds.status.observedGeneration,
      ds.status.updatedNumberScheduled,
      ds.status.numberReady,
      ds.status.numberAvailable,
    ]).toEqual([ds.metadata.generation, 1, 1, 1]);
    const sts = await get("StatefulSet", "pair-sts");
    expect([
      sts.status.observedGeneration,
      sts.status.currentRevision,
      sts.status.updatedReplicas,
      sts.status.readyReplicas,
    ]).toEqual([sts.metadata.generation, sts.status.updateRevision, 1, 1]);
    for (const app of ["pair-ds", "pair-sts"]) {
      const seen = await pods(app);
      expect(seen.map((x) => [x.ready, x.imageID.endsWith(build), x.restarts])).toEqual([[true, true, 0]]);
    }
    const s = await store();
    expect([s["last-refreshed-pair-digest"], s["previous-pair-digest"]]).toEqual([build, good.pair]);
  }, 600_000);

  test("the tick's Job killed by activeDeadlineSeconds in the middle of a rollout: the count kept, nothing half-recorded, the next ticks recover", async () => {
    const before = await store();
    // Ready only 40 s after it starts: the rollout is still under way when the Job's deadline
    // (20 s) ends it, and the wait's own rolloutTimeout (30 s) has not come.
    const slow = await c.images.server(repo("slow"), "stable", { mode: "slow", after: 40 });
    const job = `deadline-${Date.now() % 100000}`;
    const made = await ok(
      c.kubectl([
        "create",
        "job",
        "--from=cronjob/image-refresh",
        job,
        "-n",
        RELEASE_NS,
        "--dry-run=client",
        "-o",
        "json",
      ]),
      "render job",
    );
    const manifest = JSON.parse(made);
    manifest.spec.activeDeadlineSeconds = 20;
    await ok(c.kubectl(["create", "-f", "-"], { stdin: JSON.stringify(manifest) }), "create job");
    const reason = await jobFailure(job);
    expect(reason).toBe("DeadlineExceeded");
    await podsGone(job);

    // The rollout was started and never seen to end: the count taken for it stays, the attempt
    // stays `started` (told as abandoned), no build is called failed, nothing is recorded, and
    // a stopped tick starts no revert: the workload is left on the new build.
    const s = await store();
    expect([
      s["refresh-attempt-slow"],
      s["failed-slow-digest"],
      s["last-refreshed-slow-digest"],
      s["verified-slow-at"],
    ]).toEqual(["1", undefined, before["last-refreshed-slow-digest"], before["verified-slow-at"]]);
    expect(s["last-attempt-slow"]).toStartWith(`${slow} started `);
    expect(await image("Deployment", "slow")).toBe(pinned("slow", slow));
    const status = await p.command(["status"]);
    expect(status.exitCode).toBe(0);
    expect(status.log).toContain("abandoned");
    console.log(`deadline: status says\n${status.log}`);

    // The next ticks recover: while the new pod is not yet Ready the workload does not settle
    // and the image waits; once it is, the build is judged like any other.
    const next = await p.tick();
    console.log(`deadline: next tick ${next.exitCode} ${next.outcome}\n${errorsOf(next)}`);
    await allOn("slow", slow, 1);
    const after = await p.tick();
    console.log(`deadline: after Ready ${after.exitCode} ${after.outcome}\n${errorsOf(after)}`);
    expect(said(after)).toEqual([0, "refreshed", ""]);
    // Recorded only after this tick watched the build's pods for the whole window.
    expect(after.log).toContain(`verifying Deployment ${APPS}/slow`);
    const done = await store();
    expect([done["last-refreshed-slow-digest"], done["refresh-attempt-slow"]]).toEqual([slow, undefined]);
  }, 600_000);

  test("the new pods deleted while the tick verifies them: no build is called refreshed that was never seen Ready for verifyFor", async () => {
    // Ready at once, crashing 8 s after it starts: inside a 10 s window on any pod that lives
    // through it. The pods that would show it are deleted two seconds into the window; their
    // replacements would crash after the window's end.
    const bad = await c.images.server(repo("gone"), "stable", { mode: "crash", after: 8 });
    const t0 = Date.now();
    const seen = sample("gone");
    const job = `verify-${Date.now() % 100000}`;
    await ok(
      c.kubectl(["create", "job", "--from=cronjob/image-refresh", job, "-n", RELEASE_NS]),
      "create job",
    );
    const tickPod = await podOf(job);
    await logSays(tickPod, `verifying Deployment ${APPS}/gone`);
    await Bun.sleep(2000);
    const victims = (await pods("gone")).filter((x) => x.image === pinned("gone", bad) && !x.deleting);
    expect(victims.map((x) => [x.ready, x.restarts])).toEqual([
      [true, 0],
      [true, 0],
    ]);
    for (const v of victims)
      await ok(c.kubectl(["delete", "pod", v.name, "-n", APPS, "--wait=false"]), `delete ${v.name}`);
    const t = await finished(c, job, t0);
    console.log(`pods deleted mid-verification, pods:\n${(await seen()).join("\n")}`);
    console.log(`pods deleted mid-verification: ${t.exitCode} ${t.outcome}\n${errorsOf(t)}`);
    expect([t.exitCode, t.outcome]).toEqual([1, "failed"]);
    const s = await store();
    expect(s["last-refreshed-gone-digest"]).toBe(good.gone);
    expect([s["refresh-attempt-gone"], s["failed-gone-digest"]]).toEqual(["1", bad]);
    expect(await image("Deployment", "gone")).toBe(pinned("gone", good.gone as string));
    await allOn("gone", good.gone as string, 2);
  }, 600_000);

  /** Why Job `job` failed (its Failed condition's reason); waits up to 120 s. */
  async function jobFailure(job: string): Promise<string> {
    for (let i = 0; i < 240; i++) {
      const j = await c.admin.get(`/apis/batch/v1/namespaces/${RELEASE_NS}/jobs/${job}`);
      // biome-ignore lint/suspicious/noExplicitAny: conditions read loosely
      const f = j.status?.conditions?.find((x: any) => x.type === "Failed" && x.status === "True");
      if (f) return f.reason;
      await Bun.sleep(500);
    }
    throw new Error(`Job ${job} did not fail within 120 s`);
  }
  /** The Job's pods are gone: its process has ended. */
  async function podsGone(job: string): Promise<void> {
    for (let i = 0; i < 240; i++) {
      const l = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/pods?labelSelector=job-name%3D${job}`);
      if (l.items.length === 0) return;
      await Bun.sleep(500);
    }
    throw new Error(`Job ${job}'s pods are still there after 120 s`);
  }
  async function podOf(job: string): Promise<string> {
    for (let i = 0; i < 240; i++) {
      const l = await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/pods?labelSelector=job-name%3D${job}`);
      if (l.items[0]) return l.items[0].metadata.name;
      await Bun.sleep(250);
    }
    throw new Error(`Job ${job} has no pod after 60 s`);
  }
  /** Waits (up to 120 s) until the running tick's log has a line containing `text`. */
  async function logSays(pod: string, text: string): Promise<void> {
    for (let i = 0; i < 240; i++) {
      const r = await c.kubectl(["logs", pod, "-n", RELEASE_NS]);
      if (r.out.includes(text)) return;
      await Bun.sleep(500);
    }
    throw new Error(`${pod}'s log never said "${text}"`);
  }
});
