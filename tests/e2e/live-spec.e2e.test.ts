// The verdict from each target's live image end to end, on the compiled binary against the
// simulated cluster, which keeps managedFields as kube-apiserver does: a deploy tool that renders
// the floating tag over the pin, a GitOps controller that reverts it after every tick, a human's
// pin (with the real kubectl where it is installed), a container that runs another repository, and
// `reconcile: report`.
import { describe, expect, test } from "bun:test";
import { imageOwners } from "../../lib/kube/managed-fields.ts";
import type { WorkloadKind } from "../../lib/kube/objects.ts";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { kubectlFor } from "../support/kubectl.ts";
import { needTool } from "../support/tools.ts";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;
const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });

let w: World;
worldPerTest((world) => {
  w = world;
});

const tag = () => `${w.registry.host}/myorg/api:stable`;
const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const apiImage = () => w.image("Deployment", "apps", "api", "api");
const proxyImage = () => w.image("Deployment", "apps", "api-proxy", "proxy");

/**
 * A change as another writer, and its rollout run to the end first, as a `helm upgrade --wait` or a
 * human's `kubectl rollout status` would: the tick must meet a settled state object.
 */
async function setImage(
  kind: WorkloadKind,
  ns: string,
  name: string,
  container: string,
  image: string,
  manager: string,
) {
  w.api.setImage(kind, ns, name, container, image, { manager });
  await waitFor(w.api, kind, ns, name, settled);
}

/** Workload patches the API server accepted, by workload name (the store's are not workloads). */
const workloadPatches = () =>
  w.api.log
    .filter(
      (e) =>
        e.method === "PATCH" &&
        e.status < 300 &&
        e.path.startsWith("/apis/apps/") &&
        !e.path.endsWith("/deployments/api"),
    )
    .map((e) => e.path.split("/").pop())
    .concat(
      w.api.log
        .filter((e) => e.method === "PATCH" && e.status < 300 && e.path.endsWith("/deployments/api"))
        .filter(
          (e) =>
            e.contentType?.startsWith("application/json-patch+json") && e.body?.includes("/spec/template/"),
        )
        .map(() => "api"),
    );
const events = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300 && e.path.endsWith("/events"))
    .map((e) => JSON.parse(e.body ?? "{}"));
const writes = () => w.api.log.filter((e) => e.method !== "GET");

describe("a deploy tool renders the floating tag over the pin", () => {
  test("Helm: one counted re-pin of that container, a PinRestored Event naming helm, then in sync", async () => {
    await recorded(w);
    const R = w.ours()[k("last-refreshed-api-digest")] as string;
    expect(apiImage()).toBe(pin(R));
    await setImage("Deployment", "apps", "api", "api", tag(), "helm");
    w.api.clearLog();
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("refreshed: api: refreshed; node-agent: noop");
    expect(r.stderr).toContain("written by helm");
    expect(apiImage()).toBe(pin(R));
    expect(workloadPatches()).toEqual(["api"]);
    const ev = events();
    // One Event about each workload of the image (its targets api and api-proxy).
    expect(ev.map((e) => e.reason)).toEqual(["PinRestored", "PinRestored"]);
    expect(ev[0].type).toBe("Warning");
    expect(ev[0].note).toContain("helm");
    // The re-pin went through the attempt-before-patch path and was reset.
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
    expect(w.ours()[k("repin-streak-api")]).toBe("1");
    // Our pin is ours again in managedFields.
    const managed = w.api.getObject("Deployment", "apps", "api").metadata.managedFields;
    expect(imageOwners(managed, "api").map((o) => o.manager)).toEqual(["image-refresh"]);
    // The next tick finds the pin in place and removes the streak; the one after writes nothing.
    w.api.clearLog();
    const next = await w.run();
    expect(next.code).toBe(0);
    expect(next.stderr).toContain("noop: api: noop; node-agent: noop");
    expect(w.ours()[k("repin-streak-api")]).toBeUndefined();
    w.api.clearLog();
    const quiet = await w.run();
    expect(quiet.code).toBe(0);
    expect(writes()).toEqual([]);
  });

  test("a GitOps controller that reverts after every tick: one re-pin, then pin_contested, exit 1, no loop over 6 ticks", async () => {
    await recorded(w);
    const revert = () => setImage("Deployment", "apps", "api-proxy", "proxy", tag(), "argocd-controller");
    await revert();
    w.api.clearLog();
    const codes: number[] = [];
    const stderr: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await w.run();
      codes.push(r.code);
      stderr.push(r.stderr);
      await revert();
    }
    expect(codes).toEqual([0, 1, 1, 1, 1, 1]);
    expect(workloadPatches()).toEqual(["api-proxy"]);
    expect(events().map((e) => e.reason)).toEqual([
      "PinRestored",
      "PinRestored",
      "PinContested",
      "PinContested",
    ]);
    const contested = stderr[1] as string;
    expect(contested).toContain("held: api: held (argocd-controller); node-agent: noop");
    expect(contested).toContain("argocd-controller");
    expect(contested).toContain("RespectIgnoreDifferences=true");
    expect(contested).toContain("image-refresh rearm api");
    expect(stderr[5]).toContain("pin_contested");
    // Once the human has told the tool to leave the image alone, rearm hands it back: one re-pin.
    const rearm = await w.run(["rearm", "api"]);
    expect(rearm.code).toBe(0);
    expect(w.ours()[k("repin-streak-api")]).toBeUndefined();
    const again = await w.run();
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("refreshed: api: refreshed");
  });

  test("reconcile: report leaves the tag alone: drifted, exit 0, zero writes", async () => {
    await recorded(w);
    w.writeConfig((c) => (c.reconcile = "report"));
    await setImage("Deployment", "apps", "api", "api", tag(), "helm");
    w.api.clearLog();
    for (let i = 0; i < 2; i++) {
      const r = await w.run();
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("drifted: api: drifted (helm); node-agent: noop");
    }
    expect(writes()).toEqual([]);
    expect(apiImage()).toBe(tag());
  });

  test("adoption: containers that name the tag are re-pinned once, on the tick after the first observation", async () => {
    for (const [kind, ns, name, container, repo] of [
      ["Deployment", "apps", "api", "api", "myorg/api"],
      ["Deployment", "apps", "api-proxy", "proxy", "myorg/api"],
      ["DaemonSet", "agents", "node-agent", "agent", "myorg/node-agent"],
    ] as const)
      await setImage(kind, ns, name, container, `${w.registry.host}/${repo}:stable`, "helm");
    const first = await w.run();
    expect(first.code).toBe(0);
    expect(first.stderr).toContain("recorded: api: recorded; node-agent: recorded");
    expect(proxyImage()).toBe(tag());
    w.api.clearLog();
    const adopt = await w.run();
    expect(adopt.code).toBe(0);
    expect(adopt.stderr).toContain("refreshed: api: refreshed; node-agent: refreshed");
    expect(workloadPatches().sort()).toEqual(["api", "api-proxy", "node-agent"]);
    expect(proxyImage()).toBe(pin(w.ours()[k("last-refreshed-api-digest")] as string));
    // Nothing was wrong: one Normal Event per workload, naming only that workload's containers;
    // no Warning claiming a pin had been replaced.
    const ev = events();
    expect(ev.map((e) => `${e.type} ${e.reason} ${e.regarding.name}`).sort()).toEqual([
      "Normal Pinned api",
      "Normal Pinned api-proxy",
      "Normal Pinned node-agent",
    ]);
    const note = (name: string) => ev.find((e) => e.regarding.name === name)?.note as string;
    expect(note("api")).toContain("api=");
    expect(note("api")).not.toContain("node-agent");
    expect(note("node-agent")).toContain("agent=");
    expect(note("node-agent")).not.toContain("myorg/api@");
    expect(ev.map((e) => e.note).join(" ")).not.toContain("had been replaced");
    // The adoption is done: the next tick finds every pin in place and writes nothing more than
    // the streak's removal; later ticks write nothing.
    await w.run();
    expect(w.ours()[k("adopt-api")]).toBeUndefined();
    expect(w.ours()[k("adopt-node-agent")]).toBeUndefined();
  });
});

describe("a human's pin", () => {
  /** R moves to a second build, so the first one is an older digest a human can roll back to. */
  async function onSecondBuild(): Promise<{ old: string; R: string }> {
    await recorded(w);
    const old = w.ours()[k("last-refreshed-api-digest")] as string;
    const R = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(proxyImage()).toBe(pin(R));
    return { old, R };
  }

  test("set image to another digest: paused, no patch, one Event; set back to the tag: the next tick re-pins", async () => {
    const { old, R } = await onSecondBuild();
    await setImage("Deployment", "apps", "api-proxy", "proxy", pin(old), "kubectl-set");
    w.api.clearLog();
    const first = await w.run();
    expect(first.code).toBe(0);
    expect(first.stderr).toContain("paused: api: paused (kubectl-set); node-agent: noop");
    expect(first.stderr).toContain("kubectl -n apps set image deployment/api-proxy proxy=");
    const second = await w.run();
    expect(second.code).toBe(0);
    expect(workloadPatches()).toEqual([]);
    expect(events().map((e) => e.reason)).toEqual(["RefreshPaused", "RefreshPaused"]);
    expect(proxyImage()).toBe(pin(old));
    // status names who pinned it and how to resume.
    const status = await w.run(["status", "api"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("PAUSED (pinned_by_human)");
    expect(status.stdout).toMatch(/proxy: .*pinned to another digest; image last changed by kubectl-set at /);
    // The human hands it back: the tag again; the next tick re-pins it to R.
    await setImage("Deployment", "apps", "api-proxy", "proxy", tag(), "kubectl-set");
    w.api.clearLog();
    const back = await w.run();
    expect(back.code).toBe(0);
    expect(back.stderr).toContain("refreshed: api: refreshed");
    expect(proxyImage()).toBe(pin(R));
    expect(w.ours()[k("paused-api")]).toBeUndefined();
  });

  test("a refresh due while one target is paused holds the whole image; the other image goes on", async () => {
    const { old } = await onSecondBuild();
    await setImage("Deployment", "apps", "api-proxy", "proxy", pin(old), "kubectl-set");
    const before = apiImage();
    w.registry.push("myorg/api", "stable");
    const agent = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.clearLog();
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("paused: api: paused (kubectl-set); node-agent: refreshed");
    expect(apiImage()).toBe(before);
    expect(workloadPatches()).toEqual(["node-agent"]);
    expect(w.ours()[k("last-refreshed-node-agent-digest")]).toBe(agent);
  });

  test.skipIf(noKubectl)(
    "the real kubectl set image pauses the image (its manager is kubectl-set)",
    async () => {
      const { old } = await onSecondBuild();
      const kubectl = kubectlFor(w.api, "image-refresh-live-spec-");
      const set = await kubectl("-n", "apps", "set", "image", "deployment/api-proxy", `proxy=${pin(old)}`);
      expect(set.code, set.err).toBe(0);
      // The guard is per image: the human's pin rolls out before the tick judges it (a tick
      // during that rollout skips the image, as it must).
      await waitFor(w.api, "Deployment", "apps", "api-proxy", settled);
      w.api.clearLog();
      const r = await w.run();
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("paused: api: paused (kubectl-set)");
      expect(workloadPatches()).toEqual([]);
      const back = await kubectl("-n", "apps", "set", "image", "deployment/api-proxy", `proxy=${tag()}`);
      expect(back.code, back.err).toBe(0);
      // The guard is per image: the hand-back rolls out before the tick re-pins it.
      await waitFor(w.api, "Deployment", "apps", "api-proxy", settled);
      const repin = await w.run();
      expect(repin.code).toBe(0);
      expect(repin.stderr).toContain("refreshed: api: refreshed");
    },
  );
});

describe("kubectl rollout undo of a target", () => {
  // The bookkeeping lives in the store, which no rollback of a workload touches: the recorded
  // digest, a count and a lockout stay. The container rolled back to an older pin by kubectl is a
  // human's pin: the image is paused, and nothing retries the build the lockout stopped.
  async function refreshedThenLocked(): Promise<{ old: string; R: string }> {
    await recorded(w);
    const old = w.book()["last-refreshed-api-digest"] as string;
    const R = w.registry.push("myorg/api", "stable");
    const r = await w.run();
    expect(r.stderr).toContain("refreshed: api: refreshed");
    expect(apiImage()).toBe(pin(R));
    await waitFor(w.api, "Deployment", "apps", "api", settled);
    // Then a bad build locked the image out (three failed attempts, as a tick leaves them).
    const bad = w.registry.push("myorg/api", "stable");
    w.setBook({ "refresh-attempt-api": "3", "refresh-flap-detected-api": "3", "failed-api-digest": bad });
    return { old, R };
  }

  async function standsBack(old: string, R: string) {
    expect(apiImage()).toBe(pin(old));
    w.api.clearLog();
    const r = await w.run();
    // Paused by the rollback (a human's pin, exit 0): nothing patched; R, the count and the lockout unchanged.
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("api: paused (kubectl)");
    expect(workloadPatches()).toEqual([]);
    expect(w.book()["last-refreshed-api-digest"]).toBe(R);
    expect(w.book()["refresh-attempt-api"]).toBe("3");
    expect(w.book()["refresh-flap-detected-api"]).toBe("3");
    expect(events().map((e) => e.reason)).toEqual(["RefreshPaused", "RefreshPaused"]);
    // Handed back with the tag, the image is still locked out: exit 1, the bad build is not tried.
    await setImage("Deployment", "apps", "api", "api", tag(), "kubectl-set");
    w.api.clearLog();
    const back = await w.run();
    expect(back.code).toBe(1);
    expect(back.stderr).toContain("api: locked_out 3/3");
    expect(workloadPatches()).toEqual([]);
  }

  test("simulated: the old template written back by kubectl: paused, the lockout and count survive", async () => {
    const { old, R } = await refreshedThenLocked();
    w.api.update(
      "Deployment",
      "apps",
      "api",
      (d) => {
        d.spec.template.spec.containers.find((x: { name: string }) => x.name === "api").image = pin(old);
      },
      { manager: "kubectl" },
    );
    await waitFor(w.api, "Deployment", "apps", "api", settled);
    await standsBack(old, R);
  });

  test.skipIf(noKubectl)(
    "the real kubectl rollout undo: paused, the lockout and count survive, nothing retries the bad build",
    async () => {
      const { old, R } = await refreshedThenLocked();
      const kubectl = kubectlFor(w.api, "image-refresh-undo-");
      const undo = await kubectl("-n", "apps", "rollout", "undo", "deployment/api");
      expect(undo.code, undo.err).toBe(0);
      await waitFor(w.api, "Deployment", "apps", "api", settled);
      await standsBack(old, R);
    },
  );
});

describe("the wrong container", () => {
  test("a target container that runs another repository is never patched: held, target_mismatch, exit 1", async () => {
    await recorded(w);
    w.writeConfig((c) => (c.images[0].targets[0].container = "sidecar"));
    w.registry.push("myorg/api", "stable");
    w.api.clearLog();
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("held: api: held; node-agent: noop");
    expect(r.stderr).toContain("container sidecar runs envoy:1");
    expect(w.image("Deployment", "apps", "api", "sidecar")).toBe("envoy:1");
    expect(workloadPatches()).toEqual([]);
  });
});
