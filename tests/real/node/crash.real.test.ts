// Builds that really crash, on the real node, judged by the product's own image as the CronJob:
// the seed's case (Ready, then crashing a few seconds later) caught by the verification window
// and reverted by the tick that rolled it out, retried and locked out on the third attempt,
// announced, and the fix rolling out after `reject`. And a build that goes bad well after its
// verification: its containers crash once 45 s after they started, the kubelet restarts them and
// they are Ready again, the Deployment fully available; the next tick, inside regressionWindow,
// lists the pods, sees the restart since the verification, counts it as a regression of that
// build and reverts it, and the fix rolls out on the tick after.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ok } from "../kubectl.ts";
import { list, namespace } from "../manifests.ts";
import { type NodeCluster, startNodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";
import { needNode } from "./gate.ts";
import {
  installProduct,
  type Product,
  productConfig,
  productEvents,
  RELEASE_NS,
  type Tick,
} from "./product.ts";
import { serverDeployment } from "./workloads.ts";

const missing = needNode("tests/real/node/crash.real.test.ts", ["helm4"]);
const APPS = "apps";
const STORE = "image-refresh-state";
/** Each workload's image is the repository apps/<name>. */
const repo = (name: string) => `${APPS}/${name}`;
const tagged = (name: string) => `${REGISTRY_HOST}/${repo(name)}:stable`;
const pinned = (name: string, digest: string) => `${REGISTRY_HOST}/${repo(name)}@${digest}`;

const said = (t: Tick) => [t.exitCode, t.outcome, t.exitCode === 0 ? "" : t.log];

describe.skipIf(missing)("builds that really crash, judged by the product on a real node", () => {
  let c: NodeCluster;
  let p: Product;
  const good: Record<string, string> = {};
  beforeAll(async () => {
    c = await startNodeCluster({ crashLoopMax: "5s" });
    const names = ["web", "api"];
    for (const n of names) good[n] = await c.images.server(repo(n), "stable", { mode: "ready" });
    const items = names.map((n) => serverDeployment(APPS, n, tagged(n), 2));
    await ok(c.kubectl(["apply", "-f", "-"], { stdin: list([namespace(APPS), ...items]) }), "apply");
    const images = names.map((n) => ({
      repository: repo(n),
      targets: [{ kind: "Deployment", namespace: APPS, name: n, container: n }],
    }));
    p = await installProduct(
      c,
      productConfig(images, {
        namespace: APPS,
        verifyFor: "15s",
        regressionWindow: "10m",
        maxRefreshAttempts: 3,
      }),
    );
    for (const n of names)
      await ok(c.kubectl(["rollout", "status", `deployment/${n}`, "-n", APPS, "--timeout=90s"]), n);
    // First observation, then adoption: both workloads pinned to their good build.
    expect(said(await p.tick())).toEqual([0, "recorded", ""]);
    expect(said(await p.tick())).toEqual([0, "refreshed", ""]);
    for (const n of names) expect(await image(n)).toBe(pinned(n, good[n] as string));
  }, 600_000);
  afterAll(async () => {
    await c?.stop();
  });

  async function image(name: string): Promise<string> {
    const d = await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/${name}`);
    return d.spec.template.spec.containers[0].image;
  }

  async function store(): Promise<Record<string, string>> {
    return (await c.admin.get(`/api/v1/namespaces/${RELEASE_NS}/configmaps/${STORE}`)).data ?? {};
  }

  /** Every pod of `name` runs `digest`, Ready; waits up to 60 s (a revert's old pods terminating). */
  async function allOn(name: string, digest: string): Promise<void> {
    let last = "";
    for (let i = 0; i < 120; i++) {
      const pods = await c.admin.get(`/api/v1/namespaces/${APPS}/pods?labelSelector=app%3D${name}`);
      // biome-ignore lint/suspicious/noExplicitAny: pods read loosely
      const seen = pods.items.map((x: any) => {
        const s = x.status?.containerStatuses?.[0] ?? {};
        return `${s.ready === true} ${String(s.imageID).endsWith(digest)} ${x.metadata.deletionTimestamp ? "deleting" : ""}`;
      });
      last = seen.join(", ");
      if (seen.length === 2 && seen.every((s: string) => s === "true true ")) return;
      await Bun.sleep(500);
    }
    throw new Error(`${name}'s pods are not all Ready on ${digest}: ${last}`);
  }

  test("the seed's case: Ready, then crashing 5 s later; reverted by the tick that rolled it out, locked out on the third attempt, the fix rolled out after reject", async () => {
    const bad = await c.images.server(repo("web"), "stable", { mode: "crash", after: 5 });
    const first = await p.tick();
    expect([first.exitCode, first.outcome]).toEqual([1, "failed"]);
    // Reverted within the same tick, and the workload is back on the good build, Ready.
    expect(await image("web")).toBe(pinned("web", good.web as string));
    await allOn("web", good.web as string);
    const s1 = await store();
    expect([s1["refresh-attempt-web"], s1["failed-web-digest"]]).toEqual(["1", bad]);
    const events = await productEvents(c);
    expect(events).toContainEqual({
      type: "Warning",
      reason: "RolloutReverted",
      about: `${APPS} Deployment/web`,
    });
    // api shares no workload with web: untouched by web's trouble.
    expect(await image("api")).toBe(pinned("api", good.api as string));

    const second = await p.tick();
    expect([second.exitCode, second.outcome]).toEqual([1, "failed"]);
    expect((await store())["refresh-attempt-web"]).toBe("2");
    const third = await p.tick();
    expect(third.exitCode).toBe(1);
    const s3 = await store();
    // The lockout is announced on the tick whose failure reached the limit.
    expect([s3["refresh-attempt-web"], s3["refresh-flap-detected-web"]]).toEqual(["3", "3"]);
    expect((await productEvents(c)).map((e) => e.reason)).toContain("RefreshLockedOut");
    await allOn("web", good.web as string);

    // Locked out: the next tick touches nothing and says so.
    const generation = (await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/web`)).metadata
      .generation;
    const locked = await p.tick();
    expect([locked.exitCode, locked.outcome]).toEqual([1, "locked_out"]);
    expect((await c.admin.get(`/apis/apps/v1/namespaces/${APPS}/deployments/web`)).metadata.generation).toBe(
      generation,
    );

    // A human rejects the failed build (a Job of the same image), then the fix is pushed.
    const reject = await p.command(["reject", "web"]);
    expect([reject.exitCode, reject.condition]).toEqual([0, "Complete"]);
    const fix = await c.images.server(repo("web"), "stable", { mode: "ready" });
    const fixed = await p.tick();
    expect(said(fixed)).toEqual([0, "refreshed", ""]);
    expect(await image("web")).toBe(pinned("web", fix));
    await allOn("web", fix);
  }, 900_000);

  /** Both pods of `name` run `digest`, restarted at least once and Ready again; waits up to 150 s. */
  async function restartedAndReady(name: string, digest: string): Promise<void> {
    let last = "";
    for (let i = 0; i < 300; i++) {
      const pods = await c.admin.get(`/api/v1/namespaces/${APPS}/pods?labelSelector=app%3D${name}`);
      // biome-ignore lint/suspicious/noExplicitAny: pods read loosely
      const seen = pods.items.map((x: any) => {
        const s = x.status?.containerStatuses?.[0] ?? {};
        return `${s.ready === true} ${String(s.imageID).endsWith(digest)} ${(s.restartCount ?? 0) > 0}`;
      });
      last = seen.join(", ");
      if (seen.length === 2 && seen.every((s: string) => s === "true true true")) return;
      await Bun.sleep(500);
    }
    throw new Error(`${name}'s pods did not restart and come back Ready on ${digest}: ${last}`);
  }

  test("a build that crashes once well after its verification, Ready again: the next tick counts a regression and reverts it, the fix rolls out after", async () => {
    const bad = await c.images.server(repo("api"), "stable", { mode: "crash", after: 45 });
    const rolled = await p.tick();
    expect(said(rolled)).toEqual([0, "refreshed", ""]);
    const s0 = await store();
    expect([s0["last-refreshed-api-digest"], s0["previous-api-digest"]]).toEqual([bad, good.api]);
    expect(s0["verified-api-at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // Long after the verification: each container exits once, is restarted, and is Ready again.
    await restartedAndReady("api", bad);
    const fix = await c.images.server(repo("api"), "stable", { mode: "ready" });
    const regressed = await p.tick();
    expect([regressed.exitCode, regressed.outcome]).toEqual([1, "failed"]);
    expect(regressed.log).toContain(`build ${bad} regressed within regressionWindow of its verification`);
    expect(regressed.log).toMatch(/pod apps\/api-\w+-\w+: container api restarted/);
    const s1 = await store();
    expect([s1["refresh-attempt-api"], s1["failed-api-digest"], s1["last-refreshed-api-digest"]]).toEqual([
      "1",
      bad,
      good.api,
    ]);
    expect(s1["last-attempt-api"]).toMatch(new RegExp(`^${bad} regressed `));
    expect(await productEvents(c)).toContainEqual({
      type: "Warning",
      reason: "BuildRegressed",
      about: `${APPS} Deployment/api`,
    });
    expect(await image("api")).toBe(pinned("api", good.api as string));
    await allOn("api", good.api as string);
    // Nothing in front of the fix, and the restart is not counted again.
    const fixed = await p.tick();
    expect(said(fixed)).toEqual([0, "refreshed", ""]);
    expect(await image("api")).toBe(pinned("api", fix));
    expect((await store())["refresh-attempt-api"]).toBeUndefined();
    await allOn("api", fix);
  }, 900_000);
});
