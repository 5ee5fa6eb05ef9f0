// The playground's seeding and moves (sim/playground.ts) on the simulators in-process: what each
// move does to the cluster and the registry, as a tick would find it. The binary's own run is
// playground.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseConfig } from "../../lib/config.ts";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import * as moves from "../../sim/playground.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";

const config = parseConfig(
  JSON.stringify({
    tag: "stable",
    registry: { host: "docker.io" },
    store: { namespace: "image-refresh" },
    state: { kind: "Deployment", namespace: "ops", name: "keeper" },
    images: [
      {
        repository: "myorg/web",
        targets: [
          { kind: "Deployment", namespace: "shop", name: "web", container: "web" },
          { kind: "StatefulSet", namespace: "shop", name: "db", container: "web" },
        ],
      },
      {
        repository: "myorg/sidecar",
        key: "side",
        targets: [{ kind: "Deployment", namespace: "shop", name: "web", container: "side" }],
      },
      {
        repository: "myorg/agent",
        targets: [{ kind: "DaemonSet", namespace: "infra", name: "agent", container: "agent" }],
      },
    ],
  }),
  {},
);

let api: SimApiServer;
let registry: SimRegistry;
let p: moves.Playground;
const image = (kind: "Deployment" | "DaemonSet" | "StatefulSet", ns: string, name: string, c: string) =>
  api.getObject(kind, ns, name).spec.template.spec.containers.find((x: { name: string }) => x.name === c)
    .image;
const manager = (kind: "Deployment" | "DaemonSet", ns: string, name: string) =>
  (api.getObject(kind, ns, name).metadata.managedFields as Array<{ manager: string; operation: string }>)
    .filter((f) => f.operation === "Update")
    .map((f) => f.manager);
/** Waits `ms` and says whether the workload settled. */
const settlesWithin = async (kind: "Deployment" | "DaemonSet", ns: string, name: string, ms: number) => {
  try {
    await waitFor(api, kind, ns, name, settled, ms);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  const tls = generateTls();
  [api, registry] = await Promise.all([startApiServer({ tls, stepMs: 5 }), startRegistry({ tls })]);
  p = moves.seedPlayground(config, api, registry);
});
afterAll(() => Promise.all([api.stop(), registry.stop()]));

describe("seeding from the config", () => {
  test("every target workload once, its configured containers naming the tag, as helm wrote them", () => {
    expect(p.workloads.map(moves.id)).toEqual([
      "shop/deployment/web",
      "shop/statefulset/db",
      "infra/daemonset/agent",
    ]);
    expect(image("Deployment", "shop", "web", "web")).toBe("docker.io/myorg/web:stable");
    expect(image("Deployment", "shop", "web", "side")).toBe("docker.io/myorg/sidecar:stable");
    expect(image("StatefulSet", "shop", "db", "web")).toBe("docker.io/myorg/web:stable");
    expect(manager("Deployment", "shop", "web")[0]).toBe("helm");
    for (const w of p.workloads) expect(settled(api.getObject(w.kind, w.namespace, w.name))).toBe(true);
  });

  test("the legacy state object exists when it is not a target; each repository has one first build", () => {
    expect(api.getObject("Deployment", "ops", "keeper")).toBeDefined();
    expect([...p.firstBuilds.keys()]).toEqual(["myorg/web", "myorg/sidecar", "myorg/agent"]);
    for (const d of p.firstBuilds.values()) expect(d).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe("moves", () => {
  test("publish: a new digest under the tag, by key or repository; an unknown one names the keys", () => {
    const line = moves.publish(p, "side");
    expect(line).toMatch(/^published myorg\/sidecar:stable -> sha256:[0-9a-f]{64}$/);
    expect(line).not.toContain(p.firstBuilds.get("myorg/sidecar") as string);
    expect(moves.publish(p, "myorg/agent")).toContain("published myorg/agent:stable");
    expect(() => moves.publish(p, "nope")).toThrow("known keys are web, side, agent");
  });

  test("flap: the next build published for the workload never becomes available; the old one does", async () => {
    moves.flap(p, "daemonset/agent");
    const line = moves.publish(p, "agent");
    expect(line).toContain("its pods never become available on infra/daemonset/agent");
    const bad = `docker.io/myorg/agent@${line.split(" -> ")[1]?.split(";")[0]}`;
    const before = image("DaemonSet", "infra", "agent", "agent");
    api.setImage("DaemonSet", "infra", "agent", "agent", bad, { manager: "image-refresh" });
    expect(await settlesWithin("DaemonSet", "infra", "agent", 300)).toBe(false);
    api.setImage("DaemonSet", "infra", "agent", "agent", before, { manager: "image-refresh" });
    expect(await settlesWithin("DaemonSet", "infra", "agent", 2000)).toBe(true);
    // Armed once: the build after it is fine.
    expect(moves.publish(p, "agent")).not.toContain("never become available");
  });

  test("crash: the next build becomes Ready, settles, then crashes the seconds given later", async () => {
    moves.crash(p, "daemonset/agent", "0.3", 2);
    const line = moves.publish(p, "agent");
    expect(line).toContain("its pods become Ready, then crash 0.3s later on infra/daemonset/agent");
    const bad = `docker.io/myorg/agent@${line.split(" -> ")[1]?.split(";")[0]}`;
    const before = image("DaemonSet", "infra", "agent", "agent");
    api.setImage("DaemonSet", "infra", "agent", "agent", bad, { manager: "image-refresh" });
    expect(await settlesWithin("DaemonSet", "infra", "agent", 2000)).toBe(true);
    await Bun.sleep(500);
    expect(settled(api.getObject("DaemonSet", "infra", "agent"))).toBe(false);
    const waiting = api
      .pods("infra", "app=agent")
      .filter((x: { spec: { containers: Array<{ image: string }> } }) => x.spec.containers[0]?.image === bad)
      .map(
        (x: { status: { containerStatuses: Array<{ state: { waiting?: { reason: string } } }> } }) =>
          x.status.containerStatuses[0]?.state.waiting?.reason,
      );
    expect(waiting.length).toBeGreaterThan(0);
    expect(new Set(waiting)).toEqual(new Set(["CrashLoopBackOff"]));
    api.setImage("DaemonSet", "infra", "agent", "agent", before, { manager: "image-refresh" });
    expect(await settlesWithin("DaemonSet", "infra", "agent", 2000)).toBe(true);
    expect(() => moves.crash(p, "daemonset/agent", "soon", 2)).toThrow("SECONDS must be a number");
  });

  test("hang: every rollout from now on never finishes, until heal", async () => {
    moves.hang(p, "shop/deployment/web");
    expect(settled(api.getObject("Deployment", "shop", "web"))).toBe(true); // nothing changed yet
    api.setImage("Deployment", "shop", "web", "web", "docker.io/myorg/web:other", {
      manager: "image-refresh",
    });
    expect(await settlesWithin("Deployment", "shop", "web", 300)).toBe(false);
    moves.heal(p, "deployment/web");
    expect(await settlesWithin("Deployment", "shop", "web", 2000)).toBe(true);
  });

  test("set-image is a human (kubectl-set); rerender is helm putting the tag back on every target", async () => {
    expect(moves.setImage(p, "deployment/web", "web=docker.io/myorg/web:1.2")).toContain("kubectl-set");
    expect(image("Deployment", "shop", "web", "web")).toBe("docker.io/myorg/web:1.2");
    expect(manager("Deployment", "shop", "web")).toContain("kubectl-set");
    expect(() => moves.setImage(p, "deployment/web", "web")).toThrow("CONTAINER=IMAGE");
    moves.rerender(p, "web");
    expect(image("Deployment", "shop", "web", "web")).toBe("docker.io/myorg/web:stable");
    expect(image("StatefulSet", "shop", "db", "web")).toBe("docker.io/myorg/web:stable");
  });

  test("a workload is [namespace/]kind/name; an unknown or ambiguous one lists the known", () => {
    expect(() => moves.flap(p, "deployment/nope")).toThrow(
      "known are shop/deployment/web, shop/statefulset/db, infra/daemonset/agent",
    );
    expect(moves.flap(p, "sts/db")).toContain("shop/statefulset/db");
    moves.heal(p, "sts/db");
  });
});
