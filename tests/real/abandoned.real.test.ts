// Only a build seen to fail is called failed, on the real API server: with two failed rollouts of
// an older bad build counted, a tick is killed (SIGKILL) right after it persisted attempt 3 for a
// new, healthy build, before its workload patch reached the server. The next tick, in a healthy
// world, must lock the image out as the count says, yet tell the last attempt as abandoned: no
// healthy build named failed, `status` says so, and `reject` without DIGEST asks for one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BINARY } from "../support/binary.ts";
import { readBook } from "./book.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Relay, startRelay } from "./proxy.ts";
import { type Story, startStory, storyConfig, verdictOf } from "./story.ts";

const missing = needPeers(["kube"], "tests/real/abandoned.real.test.ts");
const NS = "ab";
const STORE = "image-refresh-state";
const WEB = `/apis/apps/v1/namespaces/${NS}/deployments/web`;

describe.skipIf(missing)("an abandoned attempt on the real API server", () => {
  let s: Story;
  let relay: Relay;

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      x.reg.push(`${NS}/web`, "stable");
      return [deployment(NS, "web", { image: x.tag("web") })];
    });
    await s.rolledOut("web");
    s.config(storyConfig(s, STORE, ["web"], { rolloutTimeout: "8s" }));
    expect((await s.tick()).outcome).toBe("recorded");
    expect((await s.tick()).outcome).toBe("refreshed"); // adoption
    relay = startRelay(s.c);
  }, 240_000);
  afterAll(async () => {
    relay?.stop();
    await s?.stop();
  });

  test("killed after attempt 3 of a healthy build: the lockout names no failed build, reject asks for the DIGEST", async () => {
    const running = await s.image("web");
    const bad = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(bad, "never");
    for (const n of [1, 2]) {
      const r = await s.tick();
      expect([n, r.code, verdictOf(r, "web")]).toEqual([n, 1, "failed (reverted)"]);
      await s.rolledOut("web");
    }
    expect((await readBook(s, STORE))["failed-web-digest"]).toBe(bad);
    // status after a failed and reverted rollout says so, in the past tense, and exits 1.
    const after = await s.tick(["status", "web"]);
    expect(after.code).toBe(1);
    expect(after.stdout).toContain(`last attempt: build ${bad} at `);
    expect(after.stdout).toContain("and it was reverted to the images the workloads had before");
    expect(after.stdout).not.toContain("REFRESHED");
    const healthy = s.reg.push(`${NS}/web`, "stable");
    // The tick is killed as its first workload patch arrives: the attempt write has landed.
    const proc = Bun.spawn([BINARY, "tick", "--config", s.t.config, "--kubeconfig", relay.kubeconfig], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_EXTRA_CA_CERTS: s.t.caPath, ...s.t.env },
      stdout: "ignore",
      stderr: "pipe",
    });
    let killed = false;
    relay.hook = async (r) => {
      if (killed || r.method !== "PATCH" || r.url.pathname !== WEB) return undefined;
      killed = true;
      proc.kill("SIGKILL");
      await proc.exited;
      // The patch of a dead tick goes nowhere: nothing of the workload changes.
      return { url: new URL(`/apis/apps/v1/namespaces/${NS}/deployments/no-such-workload`, r.url) };
    };
    await proc.exited;
    relay.hook = undefined;
    expect(killed).toBe(true);
    const book = await readBook(s, STORE);
    expect(book["refresh-attempt-web"]).toBe("3");
    expect(book["last-attempt-web"]).toStartWith(`${healthy} started `);
    expect(book["failed-web-digest"]).toBe(bad);
    expect(await s.image("web")).toBe(running);
    // The next tick: the count decides the lockout, but the healthy build is not blamed.
    const next = await s.tick();
    expect([next.code, verdictOf(next, "web")]).toEqual([1, "locked_out 3/3"]);
    const said = String(next.lines.find((l) => l.image === "web" && l.outcome === "locked_out")?.msg);
    expect(said).toContain(`the last, of build ${healthy}, was abandoned`);
    expect(said).not.toContain("failed rollouts");
    expect(await s.image("web")).toBe(running);
    const status = await s.tick(["status", "web"]);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain("abandoned");
    expect(status.stdout).not.toContain(`failed build ${healthy}`);
    const reject = await s.tick(["reject", "web"]);
    expect(reject.code).toBe(2);
    expect(reject.stderr).toContain("image-refresh reject web DIGEST");
    expect((await readBook(s, STORE))["rejected-web-digest"]).toBeUndefined();
  }, 300_000);
});
