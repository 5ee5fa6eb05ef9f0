// The example overlay on a real API server: rendered by the real kubectl, every object accepted
// by the real schema (`kubectl apply --server-side --dry-run=server`) and applied; then the
// compiled binary runs as the CronJob's ServiceAccount with a token from `kubectl create token`:
// first observation, adoption of the tag-following install, a refresh, and a tick in sync, with
// no request the real RBAC authorizer forbids (the audit log says so). Then every verb of every
// rendered Role rule is removed in turn, and the same story must meet the real API's Forbidden
// for exactly that permission: the RBAC is exactly enough. The Roles come from the rendering, so
// a rule the overlay gains (or loses) is covered without editing this file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { K8sObject } from "../../lib/manifests.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { type AuditEntry, type Cluster, startCluster } from "./cluster.ts";
import { productEvents } from "./events.ts";
import { ok } from "./kubectl.ts";
import { list } from "./manifests.ts";
import { applyWorkloads, deleteWorkloads, type Overlay, renderOverlay, writeTickConfig } from "./overlay.ts";
import { needPeers } from "./peers.ts";
import { boundRoles, rbacSettled, withoutVerb } from "./roles.ts";
import { run, type TickEnv } from "./tick.ts";

const DIR = "examples/two-deployments-and-daemonset";
const missing = needPeers(["kube"], "tests/real/rbac.real.test.ts");

interface Step {
  step: string;
  code: number;
  outcome?: string;
}

describe.skipIf(missing)(`k8s/${DIR} on the real API server, as the CronJob's ServiceAccount`, () => {
  let c: Cluster;
  let reg: SimRegistry;
  let o: Overlay;
  let rendered: string;
  let t: TickEnv;
  let user: string;
  beforeAll(async () => {
    c = await startCluster();
    // The registry's certificate comes from the cluster's CA: one NODE_EXTRA_CA_CERTS for both.
    reg = await startRegistry({ tls: generateTls({ ca: { certPem: c.cp.caPem, keyPem: c.cp.caKeyPem } }) });
    o = await renderOverlay(c, DIR);
    rendered = join(c.cp.dir, "rendered.json");
    writeFileSync(rendered, JSON.stringify({ apiVersion: "v1", kind: "List", items: o.objects }));
    pushAll();
  }, 180_000);
  afterAll(async () => {
    await reg?.stop();
    await c?.stop();
  });

  /** The build each repository's targets should be on once the story settles. */
  const settledOn = new Map<string, string>();
  const push = (repository: string, settles = true) => {
    const digest = reg.push(repository, o.config.tag);
    if (settles) settledOn.set(repository, digest);
    return digest;
  };
  /** Pushes a new build of every image the config refreshes. */
  const pushAll = () => {
    for (const image of o.config.images) if (!image.pinned) push(image.repository);
  };

  async function expectPinned(): Promise<void> {
    for (const image of o.config.images)
      for (const target of image.targets) {
        const kind = target.kind.toLowerCase();
        const w = await c.cp.admin.get(
          `/apis/apps/v1/namespaces/${target.namespace}/${kind}s/${target.name}`,
        );
        const live = w.spec.template.spec.containers.find(
          (x: { name: string }) => x.name === target.container,
        );
        expect(`${target.name}: ${live.image}`).toBe(
          `${target.name}: ${reg.host}/${image.repository}@${settledOn.get(image.repository)}`,
        );
        const status = await c.kubectl([
          "rollout",
          "status",
          `${kind}/${target.name}`,
          "-n",
          target.namespace,
          "--watch=false",
        ]);
        expect(status.out).toContain("successfully rolled out");
      }
  }

  /** What the product logged in the last story, every tick's stderr. */
  let said = "";

  async function story(): Promise<Step[]> {
    const steps: Step[] = [];
    said = "";
    const tick = async (step: string) => {
      const r = await run(t);
      said += r.stderr;
      steps.push({ step, code: r.code, ...(r.outcome ? { outcome: r.outcome } : {}) });
      return r;
    };
    pushAll(); // fresh healthy builds, whatever an earlier story left the tag on
    await tick("first observation");
    await tick("adoption");
    pushAll();
    await tick("refresh");
    await tick("in sync");
    return steps;
  }

  /**
   * The DaemonSet's image gets builds that are never Ready (a crash-looping agent) while the
   * Deployments' image gets healthy ones: each tick the DaemonSet is reverted and the Deployments
   * refresh beside it, until the DaemonSet's image is locked out; then `rearm` (its build now
   * healthy: the fix was in the node, say) and, for a later bad build, `reject`.
   */
  async function lockoutStory(): Promise<Step[]> {
    const steps: Step[] = [];
    const tick = async (step: string, args: string[] = ["tick"]) => {
      const r = await run(t, args);
      steps.push({ step, code: r.code, ...(r.outcome ? { outcome: r.outcome } : {}) });
      return r;
    };
    const flappy = o.config.images.findLast((i) => i.targets.some((x) => x.kind === "DaemonSet"));
    const others = o.config.images.filter((i) => i !== flappy);
    if (!flappy || others.length === 0) throw new Error("the overlay has no DaemonSet image beside another");
    let bad = "";
    for (let n = 1; n <= o.config.maxRefreshAttempts; n++) {
      bad = push(flappy.repository, false);
      c.kubelet.build(bad, "never");
      for (const i of others) push(i.repository);
      await tick(`flap ${n}`);
    }
    await tick("lockout");
    await tick("status", ["status"]);
    c.kubelet.build(bad, "healthy");
    settledOn.set(flappy.repository, bad);
    await tick("rearm", ["rearm", flappy.key]);
    await tick("refresh after rearm");
    const rejected = push(flappy.repository, false);
    c.kubelet.build(rejected, "never");
    await tick("bad build");
    await tick("reject", ["reject", flappy.key]);
    await tick("after reject");
    return steps;
  }

  const forbidden = (since: number): AuditEntry[] =>
    c.requests(user, since).filter((e) => e.code === 403 || e.code === 401);

  test("the real schema accepts every rendered object (server-side dry run), and the overlay applies", async () => {
    const namespaces = [...new Set(o.config.images.flatMap((i) => i.targets.map((x) => x.namespace)))];
    for (const ns of namespaces) await ok(c.kubectl(["create", "namespace", ns]), `create namespace ${ns}`);
    // A server-side dry run does not create the overlay's own Namespace, so on a fresh cluster
    // every object in it is NotFound: the real server's answer, kept here so the install docs' advice
    // (apply the Namespace first) stays true.
    const own = o.objects.filter((x) => x.kind === "Namespace");
    expect(own.length).toBeGreaterThan(0);
    const fresh = await c.kubectl(["apply", "--server-side", "--dry-run=server", "-f", rendered]);
    expect(fresh.code).toBe(1);
    for (const n of own) expect(fresh.err).toContain(`namespaces "${n.metadata.name}" not found`);
    await ok(c.kubectl(["apply", "--server-side", "-f", "-"], { stdin: list(own) }), "apply the Namespace");
    const dry = await c.kubectl(["apply", "--server-side", "--dry-run=server", "-f", rendered]);
    expect(dry.err).toBe("");
    expect(dry.code).toBe(0);
    expect(dry.out.trim().split("\n")).toHaveLength(o.objects.length);
    for (const line of dry.out.trim().split("\n"))
      expect(line).toEndWith("serverside-applied (server dry run)");
    // A dry run writes nothing.
    expect((await c.kubectl(["get", "cronjob", "-A", "-o", "name"])).out).toBe("");
    await ok(c.kubectl(["apply", "--server-side", "-f", rendered]), "kubectl apply --server-side");
    const held = await ok(c.kubectl(["get", "-f", rendered, "-o", "name"]), "kubectl get -f");
    expect(held.trim().split("\n")).toHaveLength(o.objects.length);
  }, 120_000);

  test("first observation, adoption, refreshes, a DaemonSet locked out beside refreshing Deployments, rearm, reject: nothing forbidden", async () => {
    await applyWorkloads(c, o, reg.host);
    const sa = await c.serviceAccount(o.sa.namespace, o.sa.name);
    user = sa.user;
    const config = join(c.cp.dir, "config.json");
    writeTickConfig(o, config, reg.host);
    t = { kubeconfig: sa.kubeconfig, config, caPath: c.cp.caPath, env: o.env };
    const since = c.auditLength();
    expect(await story()).toEqual([
      { step: "first observation", code: 0, outcome: "recorded" },
      { step: "adoption", code: 0, outcome: "refreshed" },
      { step: "refresh", code: 0, outcome: "refreshed" },
      { step: "in sync", code: 0, outcome: "noop" },
    ]);
    await expectPinned();
    // Short waits: each bad DaemonSet build is given up at rolloutTimeout.
    writeTickConfig(o, config, reg.host, { rolloutTimeout: "8s" });
    const attempts = o.config.maxRefreshAttempts;
    expect(await lockoutStory()).toEqual([
      ...Array.from({ length: attempts - 1 }, (_, i) => ({
        step: `flap ${i + 1}`,
        code: 1,
        outcome: "failed",
      })),
      // the failure that reaches the maximum announces the lockout on its own tick
      { step: `flap ${attempts}`, code: 1, outcome: "locked_out" },
      // exit 1 for locked_out, every tick until someone rearms or rejects (the job fails, alerting)
      { step: "lockout", code: 1, outcome: "locked_out" },
      // status exits 1 like the next tick would while an image is locked out
      { step: "status", code: 1 },
      { step: "rearm", code: 0 },
      { step: "refresh after rearm", code: 0, outcome: "refreshed" },
      { step: "bad build", code: 1, outcome: "failed" },
      { step: "reject", code: 0 },
      { step: "after reject", code: 0, outcome: "paused" },
    ]);
    writeTickConfig(o, config, reg.host);
    expect(forbidden(since)).toEqual([]);
    const asked = c.requests(user, since);
    // The rollout waits really listed and watched by name, and Events were really posted.
    expect(asked.some((e) => e.verb === "list" && e.requestURI.includes("fieldSelector=metadata.name"))).toBe(
      true,
    );
    expect(
      asked.some((e) => e.verb === "watch" && e.requestURI.includes("fieldSelector=metadata.name")),
    ).toBe(true);
    expect(asked.filter((e) => e.resource === "events" && e.code === 201).length).toBeGreaterThan(0);
    // Every Event the real server was sent, it accepted (events.k8s.io/v1 validates more than the
    // simulator might); no write met anything but its answer or a precondition's 409.
    expect(asked.filter((e) => e.resource === "events" && e.code !== 201)).toEqual([]);
    // The one other answer: the store's NotFound, read before the first write created it.
    const store = `/api/v1/namespaces/${o.sa.namespace}/configmaps/${o.config.store.name}`;
    const created = asked.findIndex((e) => e.verb === "create" && e.resource === "configmaps");
    expect(created).toBeGreaterThan(0);
    expect(asked[created]?.code).toBe(201);
    const missingStore = (e: AuditEntry) => e.verb === "get" && e.requestURI === store && e.code === 404;
    expect(asked.slice(0, created).filter(missingStore).length).toBeGreaterThan(0);
    expect(
      asked.filter((e, i) => e.code >= 400 && e.code !== 409 && !(i < created && missingStore(e))),
    ).toEqual([]);
    // The Events the real server holds from the product are what `kubectl events` shows.
    const ours = await productEvents(c);
    expect(new Set(ours.map((e) => `${e.type} ${e.reason}`))).toEqual(
      new Set([
        "Normal Refreshed",
        // the adoption of the tag-following install: no pin was replaced, so no Warning
        "Normal Pinned",
        "Warning RolloutFailed",
        "Warning RolloutReverted",
        "Warning RefreshLockedOut",
        "Warning BuildRejected",
      ]),
    );
    // Every transition of the story left its Event about the workloads it concerns: each target
    // was refreshed (its own Event), and the DaemonSet's failures, lockout and rejection are about
    // the DaemonSet's image's targets alone.
    const about = (i: Overlay["config"]["images"][number]) =>
      i.targets.map((x) => `${x.namespace} ${x.kind}/${x.name}`);
    const targets = o.config.images.filter((i) => !i.pinned).flatMap(about);
    const flappy = o.config.images.findLast((i) => i.targets.some((x) => x.kind === "DaemonSet"));
    const daemon = new Set(flappy ? about(flappy) : []);
    expect(daemon.size).toBeGreaterThan(0);
    expect(new Set(ours.filter((e) => e.reason === "Refreshed").map((e) => e.about))).toEqual(
      new Set(targets),
    );
    const failures = ["RolloutFailed", "RolloutReverted", "RefreshLockedOut", "BuildRejected"];
    expect(new Set(ours.filter((e) => failures.includes(e.reason)).map((e) => e.about))).toEqual(daemon);
    for (const e of ours) expect(targets).toContain(e.about);
    // The cluster holds every target pinned to the build it settled on, rolled out: the newest
    // for the Deployments' image, the re-armed one (not the rejected one) for the DaemonSet's.
    await expectPinned();
  }, 240_000);

  describe("each verb of each rendered Role rule, removed in turn", () => {
    const variants = () => boundRoles(o.objects, o.sa).flatMap((role) => withoutVerb(role));
    test("the rendered Roles grant something to remove", () => {
      expect(variants().length).toBeGreaterThan(0);
    });
    // The variants are known only once rendered; one test runs them all, each named in its failure.
    test("every removal meets the real API's Forbidden for exactly that permission", async () => {
      const seen: string[] = [];
      for (const v of variants()) {
        await deleteWorkloads(c, o, reg.host);
        await applyRole(v.role, v.original);
        try {
          await applyWorkloads(c, o, reg.host);
          const since = c.auditLength();
          await story();
          const denied = forbidden(since).map(
            (e) => `${e.verb} ${e.apiGroup ?? ""}/${e.resource} in ${e.namespace}`,
          );
          expect({ removed: v.name, denied: [...new Set(denied)] }).toEqual({
            removed: v.name,
            denied: [v.permission],
          });
          // The product passes the real API's own words on (an error, or a WARNING for an Event).
          const [verb, groupResource] = v.permission.split(" ");
          const resource = groupResource?.split("/")[1];
          expect({
            removed: v.name,
            said: said.includes(`cannot ${verb} resource \\"${resource}\\"`),
          }).toEqual({ removed: v.name, said: true });
          seen.push(v.name);
        } finally {
          await applyRole(v.original, v.original);
        }
      }
      expect(seen).toHaveLength(variants().length);
    }, 900_000);
  });

  test("a Role without `patch` on deployments: held naming the verb, resource and Role; the count unchanged over five ticks", async () => {
    const v = boundRoles(o.objects, o.sa)
      .flatMap((role) => withoutVerb(role))
      .find((x) => x.permission.startsWith("patch apps/deployments"));
    if (!v) throw new Error("the rendered Roles grant no patch on deployments");
    const image = o.config.images.find((i) => !i.pinned && i.targets.some((x) => x.kind === "Deployment"));
    if (!image) throw new Error("the overlay has no Deployment image");
    const { namespace: storeNs, name: storeName } = o.config.store;
    const book = async () =>
      ((await c.cp.admin.get(`/api/v1/namespaces/${storeNs}/configmaps/${storeName}`)).data ?? {}) as Record<
        string,
        string
      >;
    await deleteWorkloads(c, o, reg.host);
    await applyRole(v.role, v.original);
    try {
      await applyWorkloads(c, o, reg.host);
      pushAll();
      expect((await run(t)).outcome).toBe("recorded");
      const before = (await book())[`refresh-attempt-${image.key}`];
      for (let n = 1; n <= 5; n++) {
        if (n === 3) push(image.repository); // a new build changes nothing: the Role, not the build, is at fault
        const r = await run(t);
        const line = r.lines.find((l) => l.image === image.key && l.outcome !== undefined);
        expect({ tick: n, code: r.code, outcome: line?.outcome, reason: line?.reason }).toEqual({
          tick: n,
          code: 1,
          outcome: "held",
          reason: "patch_refused",
        });
        const msg = String(line?.msg);
        expect(msg).toContain("grant `patch` on deployments.apps in");
        expect(msg).toContain(`the Role ${v.role.metadata.namespace}/${v.role.metadata.name}`);
        expect(msg).toContain(`the attempt count is back at ${before ?? 0}`);
        const after = await book();
        expect({ tick: n, count: after[`refresh-attempt-${image.key}`] }).toEqual({ tick: n, count: before });
        expect(after[`failed-${image.key}-digest`]).toBeUndefined();
        expect(after[`refresh-flap-detected-${image.key}`]).toBeUndefined();
      }
    } finally {
      await applyRole(v.original, v.original);
    }
  }, 300_000);

  /** Applies a Role as the overlay's manager and waits until the authorizer sees it. */
  async function applyRole(role: K8sObject, original: K8sObject): Promise<void> {
    await ok(
      c.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], { stdin: JSON.stringify(role) }),
      "apply Role",
    );
    await rbacSettled(c.cp.admin, `system:serviceaccount:${o.sa.namespace}:${o.sa.name}`, role, original);
  }
});
