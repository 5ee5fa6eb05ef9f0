// Builds that really crash, on the real node, judged by the product's own image as the CronJob:
// the seed's case (Ready, then crashing a few seconds later) caught by the verification window
// and reverted by the tick that rolled it out, retried and locked out on the third attempt,
// announced, and the fix rolling out after `reject`. (A build that goes bad only after it was
// verified is caught here only while its workload is unsettled at the tick; on this node a
// restart comes back Ready within seconds, so that story is proved on the real control plane's
// kubelet, tests/real/verify.real.test.ts, instead.)
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
});
