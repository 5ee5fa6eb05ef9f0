// The chart installed by the real Helm v3 and v4 on the real control plane, then the compiled
// binary run as the chart's own ServiceAccount with the config the chart rendered into its
// ConfigMap: the first observation (recorded, the store created), adoption (the floating tag
// pinned to its digest), then a refresh to a new build. The store holds each digest, and the
// audit log shows no request of that ServiceAccount refused: the chart's Roles grant what a
// tick needs (a Role missing a verb fails here with the real 403 it met).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { type SimRegistry, startRegistry } from "../../../sim/registry.ts";
import { generateTls } from "../../../sim/tls.ts";
import { type Cluster, startCluster } from "../cluster.ts";
import { helm, ok, stderrProblems } from "../kubectl.ts";
import { deployment, list, namespace } from "../manifests.ts";
import { needPeers } from "../peers.ts";
import { run } from "../tick.ts";
import { CHART } from "./helm.ts";

const missing = needPeers(["kube", "helm3", "helm4"], "tests/real/chart/install.real.test.ts");
const SA = "image-refresh";
const STORE = "image-refresh-state";

describe.skipIf(missing)("the chart installed by helm, a tick as its ServiceAccount", () => {
  let c: Cluster;
  let reg: SimRegistry;
  beforeAll(async () => {
    c = await startCluster();
    reg = await startRegistry({ tls: generateTls({ ca: { certPem: c.cp.caPem, keyPem: c.cp.caKeyPem } }) });
  }, 180_000);
  afterAll(async () => {
    await reg?.stop();
    await c?.stop();
  });

  /** Polls until the authorizer grants `verb resource` to the ServiceAccount (or 20 s pass). */
  async function granted(ns: string, user: string, verb: string, resource: string, inNs: string) {
    for (let i = 0; i < 40; i++) {
      const r = await c.kubectl(["auth", "can-i", verb, resource, "-n", inNs, `--as=${user}`]);
      if (r.out.trim() === "yes") return;
      await Bun.sleep(500);
    }
    console.log(`warn: ${verb} ${resource} in ${inNs} not granted to ${user} (${ns}) after 20 s`);
  }

  for (const major of [3, 4] as const) {
    test(`helm ${major} install; recorded, adopted, refreshed, as the chart's ServiceAccount; nothing forbidden`, async () => {
      const rel = `ir${major}`;
      const app = `app${major}`;
      const repo = `${app}/web`;
      const pushed = reg.push(repo, "stable");
      const tagged = `${reg.host}/${repo}:stable`;
      await ok(
        c.kubectl(["apply", "-f", "-"], {
          stdin: list([namespace(rel), namespace(app), deployment(app, "web", { image: tagged })]),
        }),
        "apply",
      );
      await ok(c.kubectl(["rollout", "status", "deployment/web", "-n", app, "--timeout=60s"]), "rollout");
      const values = join(c.cp.dir, `values${major}.json`);
      writeFileSync(
        values,
        JSON.stringify({
          suspend: true, // no Job of the CronJob's own: the test runs the tick itself
          config: {
            tag: "stable",
            registry: { host: reg.host },
            namespace: app,
            // No store namespace: the chart writes the release's into the rendered config, so the
            // tick run here, outside a pod, finds the store as a laptop copy of the config would.
            rolloutTimeout: "60s",
            verifyFor: "2s",
            images: [{ repository: repo, targets: [{ kind: "Deployment", name: "web", container: "web" }] }],
          },
        }),
      );
      const h = helm(major, c.cp.adminKubeconfig, c.cp.dir);
      const inst = await h([
        "install",
        "image-refresh",
        CHART,
        "-n",
        rel,
        "-f",
        values,
        "--wait",
        "--timeout=60s",
      ]);
      // Exit 0 and nothing on stderr but client-go's note that --wait's own watch was cancelled.
      expect([inst.code, stderrProblems(inst.err)]).toEqual([0, []]);

      // The config as the chart rendered it, read back from the installed ConfigMap.
      const cm = await c.cp.admin.get(`/api/v1/namespaces/${rel}/configmaps/image-refresh-config`);
      const rendered = parse(cm.data["config.yaml"]);
      expect(rendered.images[0].repository).toBe(repo);
      const config = join(c.cp.dir, `config${major}.yaml`);
      writeFileSync(config, cm.data["config.yaml"]);

      const sa = await c.serviceAccount(rel, SA);
      expect(sa.user).toBe(`system:serviceaccount:${rel}:${SA}`);
      await granted(rel, sa.user, "get", "deployments/web", app);
      await granted(rel, sa.user, "get", `configmaps/${STORE}`, rel);
      const since = c.auditLength();
      const tick = async () => {
        const from = c.auditLength();
        const r = await run({
          kubeconfig: sa.kubeconfig,
          config,
          caPath: c.cp.caPath,
          env: { LOG_FORMAT: "json" },
        });
        // Before the outcome: a Role missing a verb shows here as the real 403 it met.
        const refused = c.requests(sa.user, from).filter((q) => q.code === 403);
        expect(refused.map((q) => `${q.verb} ${q.requestURI} 403`)).toEqual([]);
        return r;
      };

      const first = await tick();
      // The binary's own words when it did not record (exit 2 is a refused config or a failed read).
      expect([first.code, first.outcome, first.code === 0 ? "" : first.stderr]).toEqual([0, "recorded", ""]);
      const recorded = await c.cp.admin.get(`/api/v1/namespaces/${rel}/configmaps/${STORE}`);
      const digest = recorded.data["last-refreshed-web-digest"] as string;
      expect(digest).toBe(pushed);
      const w0 = await c.cp.admin.get(`/apis/apps/v1/namespaces/${app}/deployments/web`);
      expect(w0.spec.template.spec.containers[0].image).toBe(tagged);

      const second = await tick();
      expect([second.code, second.outcome]).toEqual([0, "refreshed"]);
      const w1 = await c.cp.admin.get(`/apis/apps/v1/namespaces/${app}/deployments/web`);
      expect(w1.spec.template.spec.containers[0].image).toBe(`${reg.host}/${repo}@${digest}`);
      const held = await c.cp.admin.get(`/api/v1/namespaces/${rel}/configmaps/${STORE}`);
      expect(held.data["last-refreshed-web-digest"]).toBe(digest);
      expect(held.metadata.resourceVersion).not.toBe(recorded.metadata.resourceVersion);

      // A new build of the tag: the next tick refreshes to it and the store follows.
      await ok(c.kubectl(["rollout", "status", "deployment/web", "-n", app, "--timeout=60s"]), "adopted");
      const newer = reg.push(repo, "stable");
      const third = await tick();
      expect([third.code, third.outcome]).toEqual([0, "refreshed"]);
      const w2 = await c.cp.admin.get(`/apis/apps/v1/namespaces/${app}/deployments/web`);
      expect(w2.spec.template.spec.containers[0].image).toBe(`${reg.host}/${repo}@${newer}`);
      const after = await c.cp.admin.get(`/api/v1/namespaces/${rel}/configmaps/${STORE}`);
      expect([newer === digest, after.data["last-refreshed-web-digest"]]).toEqual([false, newer]);

      const seen = c.requests(sa.user, since);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.filter((q) => q.code === 403).map((q) => `${q.verb} ${q.requestURI}`)).toEqual([]);
      // The store was written by this user: created (POST) and then patched.
      const store = seen.filter((q) => q.resource === "configmaps").map((q) => `${q.verb} ${q.code}`);
      expect(store).toContain("create 201");
      expect(store).toContain("patch 200");
    }, 300_000);
  }
});
