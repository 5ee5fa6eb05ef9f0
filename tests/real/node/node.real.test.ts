// The node tier's own checks: a real kubelet on containerd pulls the test servers from the
// registry through containerd's mirror and runs them as each was built (ready, never ready,
// crashing after N s, unready after N s, not pullable); then the cluster stops and the host is
// as it was: no mount, cgroup, iptables rule, kernel setting, namespace, interface or process
// of the cluster is left.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ok } from "../kubectl.ts";
import { list, namespace } from "../manifests.ts";
import { type NodeCluster, startNodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";
import { needNode } from "./gate.ts";
import { type HostState, hostState, leftoverProcesses } from "./host-state.ts";
import { serverDeployment } from "./workloads.ts";

const missing = needNode("tests/real/node/node.real.test.ts");
const NS = "servers";

interface PodView {
  ready: boolean;
  restarts: number;
  imageID: string;
  waiting: string;
}

async function pods(c: NodeCluster, app: string): Promise<PodView[]> {
  const r = await c.admin.get(`/api/v1/namespaces/${NS}/pods?labelSelector=app%3D${app}`);
  // biome-ignore lint/suspicious/noExplicitAny: pod status read loosely
  return r.items.map((p: any) => {
    const s = p.status?.containerStatuses?.[0] ?? {};
    return {
      ready: s.ready === true,
      restarts: s.restartCount ?? 0,
      imageID: s.imageID ?? "",
      waiting: s.state?.waiting?.reason ?? "",
    };
  });
}

/** Polls `app`'s pods every 500 ms for `ms`, keeping every view seen. */
async function watchPods(c: NodeCluster, app: string, ms: number): Promise<PodView[]> {
  const seen: PodView[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    seen.push(...(await pods(c, app)));
    await Bun.sleep(500);
  }
  return seen;
}

const KINDS = ["mounts", "iptables", "sysctls", "netns", "links", "paths"] as const;

/**
 * Every kind of host state as it was, all at once, so that a failure names everything left. Mounts
 * under /tmp are compared only within `own` (the cluster's and its image builds' directories):
 * other tests on the machine mount their own containers' storage there.
 */
function expectNothingLeft(before: HostState, after: HostState, own: string[]): void {
  const mine = (m: string) => !m.startsWith("/tmp/") || own.some((d) => m.startsWith(d));
  const view = (s: HostState) => ({ ...s, mounts: s.mounts.filter(mine) });
  const [b, a] = [view(before), view(after)];
  const diff = (k: (typeof KINDS)[number]) => ({
    added: a[k].filter((x) => !b[k].includes(x)),
    removed: b[k].filter((x) => !a[k].includes(x)),
  });
  const none = Object.fromEntries(KINDS.map((k) => [k, { added: [], removed: [] }]));
  expect(Object.fromEntries(KINDS.map((k) => [k, diff(k)]))).toEqual(none);
}

describe.skipIf(missing)("a real node: containerd, kubelet, kube-proxy in a namespace of their own", () => {
  let c: NodeCluster;
  let before: HostState;
  const digests: Record<string, string> = {};
  beforeAll(async () => {
    before = hostState("none");
    c = await startNodeCluster();
    console.log(`node tier: cluster Ready in ${c.startedInMs} ms`);
  }, 240_000);
  afterAll(async () => {
    await c?.stop();
  });

  test("each test server behaves as it was built; an unpullable image fails the pull", async () => {
    const builds = {
      ready: { mode: "ready" },
      never: { mode: "never" },
      crash: { mode: "crash", after: 4 },
      unready: { mode: "unready", after: 6 },
      unpullable: { mode: "ready" },
    } as const;
    for (const [app, b] of Object.entries(builds))
      digests[app] = await c.images.server(`${NS}/${app}`, "stable", b);
    await c.images.breakPulls(`${NS}/unpullable`, digests.unpullable as string);
    const items = Object.keys(builds).map((app) =>
      serverDeployment(NS, app, `${REGISTRY_HOST}/${NS}/${app}:stable`),
    );
    await ok(c.kubectl(["apply", "-f", "-"], { stdin: list([namespace(NS), ...items]) }), "apply");
    await ok(
      c.kubectl(["rollout", "status", "deployment/ready", "-n", NS, "--timeout=90s"]),
      "rollout ready",
    );

    const [ready, never, crash, unready, unpullable] = await Promise.all(
      Object.keys(builds).map((app) => watchPods(c, app, 30_000)),
    );
    // The pulled image is the pushed build.
    expect(ready?.at(-1)?.imageID).toEndWith(digests.ready as string);
    expect(ready?.every((p) => p.ready && p.restarts === 0)).toBe(true);
    expect(never?.some((p) => p.ready)).toBe(false);
    expect(never?.at(-1)?.restarts).toBe(0);
    // Ready, then crashing into a real CrashLoopBackOff.
    expect(crash?.some((p) => p.ready)).toBe(true);
    expect(crash?.at(-1)?.restarts).toBeGreaterThanOrEqual(2);
    expect(crash?.some((p) => p.waiting === "CrashLoopBackOff")).toBe(true);
    // Ready, then unready for good, never restarted.
    expect(unready?.some((p) => p.ready)).toBe(true);
    expect(unready?.at(-1)).toMatchObject({ ready: false, restarts: 0 });
    expect(unpullable?.some((p) => p.ready)).toBe(false);
    expect(unpullable?.some((p) => p.waiting === "ErrImagePull" || p.waiting === "ImagePullBackOff")).toBe(
      true,
    );
  }, 180_000);

  test("the cluster stops and leaves nothing on the host", async () => {
    const { dir, name, netns } = c;
    const t0 = Date.now();
    await c.stop();
    console.log(`node tier: cluster stopped in ${Date.now() - t0} ms`);
    const after = hostState(name);
    expect(after.cgroups).toEqual([]);
    expect(leftoverProcesses(netns, dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    expectNothingLeft(before, after, [dir]);
  }, 60_000);

  test("a test process killed with SIGKILL takes its cluster with it: nothing is left", async () => {
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "orphan.ts")], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const reader = child.stdout.getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done)
        throw new Error(
          `orphan.ts ended before its cluster was up:\n${await new Response(child.stderr).text()}`,
        );
      out += new TextDecoder().decode(value);
    }
    const { dir, name, netns } = JSON.parse(out) as { dir: string; name: string; netns: string };
    expect(hostState(name).cgroups.length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    const t0 = Date.now();
    while (Date.now() - t0 < 60_000) {
      if (!existsSync(dir) && leftoverProcesses(netns, dir).length === 0) break;
      await Bun.sleep(500);
    }
    console.log(`node tier: an orphaned cluster was gone ${Date.now() - t0} ms after its test process`);
    const after = hostState(name);
    expect([after.cgroups, leftoverProcesses(netns, dir), existsSync(dir)]).toEqual([[], [], false]);
    expectNothingLeft(before, after, [dir]);
  }, 240_000);
});
