// managedFields as the real API server writes them, read by the compiled binary: the product's
// own pins are `image-refresh` Updates; `kubectl set image` (kubectl-set) pauses the image;
// `helm upgrade` from a small chart re-rendering the floating tag (Helm 3 and Helm 4) is
// re-pinned once and contested on the next re-render, naming helm; `kubectl rollout undo` of
// a Deployment the product refreshed puts back an older pin written by kubectl: a human's pin,
// paused. Helm 4 applies server-side, so its re-render conflicts with image-refresh's
// ownership of the image field until it is forced (--force-conflicts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readBook } from "./book.ts";
import { imageOwners, writeChart } from "./chart.ts";
import { helm, ok } from "./kubectl.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Story, startStory, storyConfig, verdictOf } from "./story.ts";

const missing = needPeers(["kube", "helm3", "helm4"], "tests/real/managed-fields.real.test.ts");
const NS = "mf";
const REPOS = ["setimg", "undo", "hthree", "hfour"];

describe.skipIf(missing)("managedFields on the real API server", () => {
  let s: Story;
  let chart: string;
  const owners = async (name: string) =>
    imageOwners(await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/${name}`), name);
  const helmRun = (major: 3 | 4, name: string, verb: string, more: string[] = []) =>
    helm(
      major,
      s.c.cp.adminKubeconfig,
      s.c.cp.dir,
    )([verb, name, chart, "-n", NS, "--set", `name=${name}`, "--set", `image=${s.tag(name)}`, ...more]);
  /** A re-render: Helm 3 patches over the live image; Helm 4 applies server-side, forced past image-refresh. */
  const rerender = async () => {
    await ok(helmRun(3, "hthree", "upgrade"), "helm3 upgrade");
    await ok(helmRun(4, "hfour", "upgrade", ["--force-conflicts"]), "helm4 upgrade");
  };

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      for (const r of REPOS) x.reg.push(`${NS}/${r}`, "stable");
      return [
        deployment(NS, "keeper", { image: "example.test/keeper:1" }),
        deployment(NS, "setimg", { image: x.tag("setimg") }),
        deployment(NS, "undo", { image: x.tag("undo") }),
      ];
    });
    chart = writeChart(s.c.cp.dir);
    await ok(helmRun(3, "hthree", "install"), "helm3 install");
    await ok(helmRun(4, "hfour", "install"), "helm4 install");
    for (const w of ["keeper", ...REPOS]) await s.rolledOut(w);
    s.config(storyConfig(s, "keeper", REPOS));
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("adoption: every pin is an image-refresh Update, and the next tick finds them in place", async () => {
    expect(await owners("setimg")).toEqual(["kubectl-client-side-apply/Update"]);
    expect(await owners("hthree")).toEqual(["helm/Update"]);
    expect(await owners("hfour")).toEqual(["helm/Apply"]);
    expect((await s.tick()).outcome).toBe("recorded");
    const adopt = await s.tick();
    expect(adopt.outcome).toBe("refreshed");
    for (const r of REPOS) expect([r, await owners(r)]).toEqual([r, ["image-refresh/Update"]]);
    expect((await s.tick()).outcome).toBe("noop");
    expect(Object.keys(await readBook(s, "keeper")).filter((k) => k.startsWith("repin-streak"))).toEqual([]);
  }, 180_000);

  test("kubectl set image pauses; helm upgrade re-rendering the tag is re-pinned; the refreshed one moves on", async () => {
    await ok(
      s.c.kubectl([
        "set",
        "image",
        "deployment/setimg",
        "-n",
        NS,
        `setimg=${s.pin("setimg", `sha256:${"a".repeat(64)}`)}`,
      ]),
      "set image",
    );
    expect(await owners("setimg")).toEqual(["kubectl-set/Update"]);
    // Helm 4 applies server-side: without --force-conflicts the real server refuses to move the
    // image field from image-refresh to helm, and the upgrade fails saying so.
    const refused = await helmRun(4, "hfour", "upgrade");
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(
      `Apply failed with 1 conflict: conflict with "image-refresh" using apps/v1: .spec.template.spec.containers[name="hfour"].image`,
    );
    await rerender();
    expect(await owners("hthree")).toEqual(["helm/Update"]);
    expect(await owners("hfour")).toEqual(["helm/Apply"]);
    expect(await s.image("hthree")).toBe(s.tag("hthree"));
    expect(await s.image("hfour")).toBe(s.tag("hfour"));
    s.reg.push(`${NS}/undo`, "stable");
    const r = await s.tick();
    console.log(
      r.lines
        .filter((l) => l.level !== "debug")
        .map((l) => `${l.level} ${l.msg}`)
        .join("\n"),
    );
    expect(verdictOf(r, "setimg")).toBe("paused (kubectl-set)");
    expect(verdictOf(r, "undo")).toBe("refreshed");
    expect(verdictOf(r, "hthree")).toBe("refreshed");
    expect(verdictOf(r, "hfour")).toBe("refreshed");
    expect(await owners("hthree")).toEqual(["image-refresh/Update"]);
    expect((await readBook(s, "keeper"))["repin-streak-hthree"]).toBe("1");
  }, 180_000);

  test("the next re-render is contested; kubectl rollout undo of a refreshed Deployment is a human's pin", async () => {
    const pinned = await s.image("undo");
    await ok(s.c.kubectl(["rollout", "undo", "deployment/undo", "-n", NS]), "rollout undo");
    await s.rolledOut("undo");
    expect(await s.image("undo")).not.toBe(pinned);
    // kubectl 1.36 writes the undo as manager `kubectl`.
    expect(await owners("undo")).toEqual(["kubectl/Update"]);
    await rerender();
    const r = await s.tick();
    console.log(
      r.lines
        .filter((l) => l.level !== "debug")
        .map((l) => `${l.level} ${l.msg}`)
        .join("\n"),
    );
    expect(r.outcome).toBe("held");
    expect(verdictOf(r, "undo")).toBe("paused (kubectl)");
    expect(verdictOf(r, "hthree")).toBe("held (helm)");
    expect(verdictOf(r, "hfour")).toBe("held (helm)");
    expect(r.stderr).toContain("PIN CONTESTED");
    // Contested pins are left as the deploy tool wrote them; the paused one as the human did.
    expect(await s.image("hthree")).toBe(s.tag("hthree"));
    expect(await s.image("hfour")).toBe(s.tag("hfour"));
  }, 180_000);
});
