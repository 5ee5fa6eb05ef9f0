// Rollouts by the real controllers, judged as `kubectl rollout status` judges them: the compiled
// binary refreshes a Deployment, a DaemonSet and a StatefulSet with a partition; a build that is
// never Ready fails a Deployment fast on the real controller's ProgressDeadlineExceeded (well
// inside rolloutTimeout) and a DaemonSet at rolloutTimeout, each reverted; and at every stage
// the real kubectl's verdict and the product's are the same words at the same resourceVersion.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { type Cluster, startCluster } from "./cluster.ts";
import { verdicts } from "./judge.ts";
import { ok } from "./kubectl.ts";
import { daemonSet, deployment, list, namespace, statefulSet } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import type { PodLike } from "./pod-status.ts";
import { messages, run, type TickEnv } from "./tick.ts";

const missing = needPeers(["kube"], "tests/real/rollouts.real.test.ts");
const NS = "roll";
const DEADLINE_S = 4;

describe.skipIf(missing)("rollouts by the real controllers", () => {
  let c: Cluster;
  let reg: SimRegistry;
  let t: TickEnv;
  const tag = (repo: string) => `${reg.host}/${NS}/${repo}:stable`;
  const pin = (repo: string, digest: string) => `${reg.host}/${NS}/${repo}@${digest}`;
  const writeConfig = (tweak: Record<string, unknown>) =>
    writeFileSync(
      t.config,
      JSON.stringify({
        tag: "stable",
        registry: { host: reg.host },
        store: { namespace: NS, name: "image-refresh-state" },
        rolloutTimeout: "90s",
        requestTimeout: "5s",
        verifyFor: "2s",
        images: [
          {
            repository: `${NS}/web`,
            targets: [{ kind: "Deployment", namespace: NS, name: "web", container: "web" }],
          },
          {
            repository: `${NS}/agent`,
            targets: [{ kind: "DaemonSet", namespace: NS, name: "agent", container: "agent" }],
          },
          {
            repository: `${NS}/db`,
            targets: [{ kind: "StatefulSet", namespace: NS, name: "db", container: "db" }],
          },
        ],
        ...tweak,
      }),
    );
  const image = async (kind: string, name: string) =>
    (await c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/${kind}/${name}`)).spec.template.spec.containers[0]
      .image;

  /** Each pod of `app` and its first container's image. */
  const podImages = async (app: string): Promise<Record<string, string>> => {
    const pods: PodLike[] = (await c.cp.admin.get(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3D${app}`))
      .items;
    return Object.fromEntries(pods.map((p) => [p.metadata.name, p.spec.containers[0]?.image ?? ""]));
  };

  /** A healthy build after a failed one: refreshed (1 of maxRefreshAttempts used), pinned. */
  const expectNextBuildRefreshes = async (repo: string, plural: string) => {
    const good = reg.push(`${NS}/${repo}`, "stable");
    const r = await run(t);
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    expect(await image(plural, repo)).toBe(pin(repo, good));
  };

  beforeAll(async () => {
    c = await startCluster();
    reg = await startRegistry({ tls: generateTls({ ca: { certPem: c.cp.caPem, keyPem: c.cp.caKeyPem } }) });
    for (const repo of ["web", "agent", "db"]) reg.push(`${NS}/${repo}`, "stable");
    const items = [
      namespace(NS),
      deployment(NS, "web", { image: tag("web"), replicas: 2, progressDeadlineSeconds: DEADLINE_S }),
      daemonSet(NS, "agent", { image: tag("agent") }),
      statefulSet(NS, "db", { image: tag("db"), replicas: 3, partition: 2 }),
    ];
    await ok(c.kubectl(["apply", "-f", "-"], { stdin: list(items) }), "apply the workloads");
    for (const w of ["deployment/web", "daemonset/agent", "statefulset/db"])
      await ok(c.kubectl(["rollout", "status", w, "-n", NS, "--timeout=90s"]), `rollout status ${w}`);
    t = {
      kubeconfig: c.cp.adminKubeconfig,
      config: join(c.cp.dir, "config.json"),
      caPath: c.cp.caPath,
      env: { LOG_FORMAT: "json" },
    };
    writeConfig({});
    expect((await run(t)).outcome).toBe("recorded");
  }, 240_000);
  afterAll(async () => {
    await reg?.stop();
    await c?.stop();
  });

  test("adoption rolls out every kind, the StatefulSet only above its partition; kubectl agrees", async () => {
    const r = await run(t);
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    for (const [kind, name] of [
      ["Deployment", "web"],
      ["DaemonSet", "agent"],
      ["StatefulSet", "db"],
    ] as const) {
      const v = await verdicts(c, kind, NS, name);
      expect(v.product).toEqual(v.kubectl);
      expect(v.kubectl.code).toBe(0);
    }
    expect((await verdicts(c, "StatefulSet", NS, "db")).kubectl.said).toBe(
      "partitioned roll out complete: 1 new pods have been updated...",
    );
    // The real StatefulSet controller replaced only the ordinals at or above the partition.
    const images = await podImages("db");
    const pinned = await image("statefulsets", "db");
    expect(pinned).toStartWith(`${reg.host}/${NS}/db@sha256:`);
    expect(images).toEqual({ "db-0": tag("db"), "db-1": tag("db"), "db-2": pinned });
  }, 180_000);

  test("a Deployment build never Ready fails on ProgressDeadlineExceeded, long before rolloutTimeout, and is reverted", async () => {
    const before = await image("deployments", "web");
    const bad = reg.push(`${NS}/web`, "stable");
    c.kubelet.build(bad, "never");
    const r = await run(t);
    expect([r.code, r.outcome]).toEqual([1, "failed"]);
    // rolloutTimeout is 90 s: only the controller's condition can end the wait this early.
    expect(r.ms).toBeLessThan(45_000);
    expect(messages(r, "info")).toContain(`deployment "web" exceeded its progress deadline`);
    expect(await image("deployments", "web")).toBe(before);
    const v = await verdicts(c, "Deployment", NS, "web");
    expect(v.product).toEqual(v.kubectl);
    expect(v.kubectl.said).toBe(`deployment "web" successfully rolled out`);
    // The real controller's condition is not left behind: the next build rolls out.
    await expectNextBuildRefreshes("web", "deployments");
  }, 180_000);

  test("a DaemonSet build never Ready fails at rolloutTimeout and is reverted", async () => {
    writeConfig({ rolloutTimeout: "8s" });
    const before = await image("daemonsets", "agent");
    const bad = reg.push(`${NS}/agent`, "stable");
    c.kubelet.build(bad, "never");
    const r = await run(t);
    expect([r.code, r.outcome]).toEqual([1, "failed"]);
    expect(r.ms).toBeGreaterThan(8_000);
    expect(await image("daemonsets", "agent")).toBe(before);
    const v = await verdicts(c, "DaemonSet", NS, "agent");
    expect(v.product).toEqual(v.kubectl);
    writeConfig({});
    await expectNextBuildRefreshes("agent", "daemonsets");
  }, 180_000);

  test("a StatefulSet refresh above its partition settles; the pods below it keep their image", async () => {
    const next = reg.push(`${NS}/db`, "stable");
    const r = await run(t);
    expect([r.code, r.outcome, r.code === 0 ? "" : messages(r, "info").slice(-3)]).toEqual([
      0,
      "refreshed",
      "",
    ]);
    expect(await image("statefulsets", "db")).toBe(pin("db", next));
    const images = await podImages("db");
    expect(images).toEqual({ "db-0": tag("db"), "db-1": tag("db"), "db-2": pin("db", next) });
    const v = await verdicts(c, "StatefulSet", NS, "db");
    expect(v.product).toEqual(v.kubectl);
  }, 180_000);

  describe("stuck rollouts, judged by both while they are stuck", () => {
    const never = `sha256:${"e".repeat(64)}`;
    test("Deployment past its progress deadline: the same error, exit 1", async () => {
      c.kubelet.build(never, "never");
      await ok(
        c.kubectl([
          "create",
          "deployment",
          "stuck",
          "-n",
          NS,
          `--image=example.test/stuck@sha256:${"d".repeat(64)}`,
        ]),
        "create stuck",
      );
      await ok(
        c.kubectl([
          "patch",
          "deployment/stuck",
          "-n",
          NS,
          "-p",
          `{"spec":{"progressDeadlineSeconds":${DEADLINE_S}}}`,
        ]),
        "deadline",
      );
      await ok(
        c.kubectl(["rollout", "status", "deployment/stuck", "-n", NS, "--timeout=60s"]),
        "first rollout",
      );
      await ok(
        c.kubectl(["set", "image", "deployment/stuck", "-n", NS, `stuck=example.test/stuck@${never}`]),
        "set image",
      );
      const mid = await verdicts(c, "Deployment", NS, "stuck");
      expect(mid.product).toEqual(mid.kubectl);
      await ok(
        c.kubectl([
          "wait",
          "deployment/stuck",
          "-n",
          NS,
          "--for=jsonpath={.status.conditions[?(@.type=='Progressing')].reason}=ProgressDeadlineExceeded",
          "--timeout=60s",
        ]),
        "deadline",
      );
      const v = await verdicts(c, "Deployment", NS, "stuck");
      expect(v.product).toEqual(v.kubectl);
      expect(v.kubectl).toEqual({
        code: 1,
        said: `error: deployment "stuck" exceeded its progress deadline`,
      });
    }, 120_000);

    test("DaemonSet whose new pod is never available: the same wait message", async () => {
      await ok(
        c.kubectl(["apply", "-f", "-"], {
          stdin: list([daemonSet(NS, "stuck-agent", { image: "example.test/stuck-agent:1" })]),
        }),
        "apply",
      );
      await ok(
        c.kubectl(["rollout", "status", "daemonset/stuck-agent", "-n", NS, "--timeout=60s"]),
        "first rollout",
      );
      await ok(
        c.kubectl([
          "set",
          "image",
          "daemonset/stuck-agent",
          "-n",
          NS,
          `stuck-agent=example.test/stuck-agent@${never}`,
        ]),
        "set image",
      );
      await Bun.sleep(3000);
      const v = await verdicts(c, "DaemonSet", NS, "stuck-agent");
      expect(v.product).toEqual(v.kubectl);
      expect(v.kubectl.said).toStartWith(`Waiting for daemon set "stuck-agent" rollout to finish: `);
    }, 120_000);
  });
});
