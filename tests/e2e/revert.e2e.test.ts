// onFailure end to end: a failed rollout puts every workload this tick patched for
// the failed images back on the images they had, newest first, each waited for; `keep` leaves
// the patch; a revert that cannot settle is `revert_failed`; SIGTERM starts no revert. The
// simulated cluster's `failImages` is a bad build: any rollout to it never becomes available,
// while a rollout back to the old images settles.
import { describe, expect, test } from "bun:test";
import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { start } from "../reliability/spawn.ts";
import { recorded, storeKey, type World } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

const pin = (digest: string) => `${w.registry.host}/myorg/api@${digest}`;
const apiImage = () => w.image("Deployment", "apps", "api", "api");
const proxyImage = () => w.image("Deployment", "apps", "api-proxy", "proxy");

/** The image patches the API server accepted, as `<workload> <image>`, in order. */
function imagePatches(): string[] {
  return w.api.log
    .filter(
      (e) => e.method === "PATCH" && e.status < 300 && e.contentType?.startsWith("application/json-patch"),
    )
    .flatMap((e) => {
      const ops: Array<{ op: string; path: string; value?: string }> = JSON.parse(e.body ?? "[]");
      const img = ops.find((o) => o.op === "replace" && o.path.endsWith("/image"));
      return img ? [`${e.path.split("/").pop()} ${img.value}`] : [];
    });
}
const events = () =>
  w.api.log
    .filter((e) => e.method === "POST" && e.status < 300)
    .map((e) => JSON.parse(e.body ?? "{}"))
    .map((e) => `${e.reason} ${e.regarding?.name}`);

/** A second build of myorg/api whose pods never become available on api-proxy; api takes it fine. */
async function badBuildOnProxy(): Promise<{ old: string; bad: string }> {
  await recorded(w);
  const old = w.ours()[k("last-refreshed-api-digest")] as string;
  const bad = w.registry.push("myorg/api", "stable");
  w.api.failImages("Deployment", "apps", "api-proxy", [pin(bad)]);
  w.api.clearLog();
  return { old, bad };
}

describe("onFailure: revert (the default)", () => {
  test("the second of two workloads fails: both patched back, newest first; count kept; digest not recorded; Events on both", async () => {
    const { old, bad } = await badBuildOnProxy();
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("failed: api: failed (reverted); node-agent: noop");
    expect(r.stderr).toContain("reverted Deployment apps/api-proxy, Deployment apps/api");
    expect(imagePatches()).toEqual([
      `api ${pin(bad)}`,
      `api-proxy ${pin(bad)}`,
      `api-proxy ${pin(old)}`,
      `api ${pin(old)}`,
    ]);
    expect(apiImage()).toBe(pin(old));
    expect(proxyImage()).toBe(pin(old));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(old);
    // The failure about the workload that failed; the revert about each workload it put back.
    expect(events()).toEqual(["RolloutFailed api-proxy", "RolloutReverted api-proxy", "RolloutReverted api"]);
  });
});

describe("when the revert cannot help", () => {
  test("a revert that does not settle itself: revert_failed, exit 1, a RevertFailed Event", async () => {
    const { old } = await badBuildOnProxy();
    // api-proxy now fails any rollout, the revert's too.
    w.api.setMode("Deployment", "apps", "api-proxy", "flap");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("reason=revert_failed");
    expect(r.stderr).toContain("the revert did not settle: Deployment apps/api-proxy (timeout)");
    // The other workload still went back.
    expect(apiImage()).toBe(pin(old));
    expect(proxyImage()).toBe(pin(old));
    expect(events()).toContain("RevertFailed api");
    expect(events()).toContain("RevertFailed api-proxy");
  });

  test("onFailure: keep leaves the patch where it failed (the earlier behaviour)", async () => {
    w.writeConfig((c) => (c.onFailure = "keep"));
    const { bad } = await badBuildOnProxy();
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("reason=rollout_failed");
    expect(imagePatches()).toEqual([`api ${pin(bad)}`, `api-proxy ${pin(bad)}`]);
    expect(proxyImage()).toBe(pin(bad));
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
  });

  test("after maxRefreshAttempts reverted failures the image is locked out, its workloads healthy on the old build", async () => {
    const { old } = await badBuildOnProxy();
    for (const n of [1, 2, 3]) {
      const r = await w.run();
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("to the images they had before this tick (settled)");
      // The failure that reaches maxRefreshAttempts announces the lockout on its own tick.
      expect(r.stderr).toContain(
        n < 3 ? "reason=rollout_failed_reverted" : "locked_out: api: locked_out 3/3",
      );
      expect(w.ours()[k("refresh-attempt-api")]).toBe(String(n));
      expect(proxyImage()).toBe(pin(old));
    }
    w.api.clearLog();
    const locked = await w.run();
    // A lockout waits for a human: exit 1.
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain("locked_out: api: locked_out 3/3");
    expect(imagePatches()).toEqual([]);
    expect(apiImage()).toBe(pin(old));
  }, 30_000);

  test("SIGTERM during the wait starts no revert: exit within 2 s, nothing written after the signal", async () => {
    w.writeConfig((c) => (c.rolloutTimeout = "60s"));
    const { bad } = await badBuildOnProxy();
    const { proc, done } = start(w);
    for (let i = 0; i < 500 && !imagePatches().includes(`api-proxy ${pin(bad)}`); i++) await Bun.sleep(10);
    await Bun.sleep(150);
    const signalled = Date.now();
    proc.kill("SIGTERM");
    const r = await done;
    expect(Date.now() - signalled).toBeLessThan(2000);
    expect(r.code).toBe(1);
    expect(w.api.log.filter((e) => e.start >= signalled && e.method !== "GET")).toEqual([]);
    expect(proxyImage()).toBe(pin(bad));
  }, 20_000);
});

describe("a re-pin that fails", () => {
  test("is reverted to the tag, then retried as the next attempt (never contested by our own revert), then locked out", async () => {
    await recorded(w);
    const R = w.ours()[k("last-refreshed-api-digest")] as string;
    const tag = `${w.registry.host}/myorg/api:stable`;
    w.api.setImage("Deployment", "apps", "api-proxy", "proxy", tag, { manager: "helm" });
    await waitFor(w.api, "Deployment", "apps", "api-proxy", settled);
    w.api.failImages("Deployment", "apps", "api-proxy", [pin(R)]);
    for (const n of [1, 2, 3]) {
      const r = await w.run();
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain("to the images they had before this tick (settled)");
      expect(r.stderr).toContain(
        n < 3 ? "reason=rollout_failed_reverted" : "locked_out: api: locked_out 3/3",
      );
      expect(r.stderr).not.toContain("pin_contested");
      expect(w.ours()[k("refresh-attempt-api")]).toBe(String(n));
      expect(proxyImage()).toBe(tag);
    }
    const locked = await w.run();
    // A lockout waits for a human: exit 1.
    expect(locked.code).toBe(1);
    expect(locked.stderr).toContain("locked_out: api: locked_out 3/3");
  }, 30_000);
});
