// The store end to end (compiled binary, simulated cluster): two ticks racing to create it, the
// upgrade from the shell job's annotations, a workload replaced without them, the lockout advice
// once a newer build arrives, reject of the failed build and of a soaking candidate, rearm after
// reject, and a tag moved back.
import { afterEach, describe, expect, test } from "bun:test";
import { runBinary } from "../support/binary.ts";
import { PREFIX, recorded, STATE, STORE_PATH, startWorld, type World, writes } from "../support/world.ts";

let w: World;
afterEach(async () => {
  await w?.stop();
});

const CREATE = "POST /api/v1/namespaces/image-refresh/configmaps";

describe("the store", () => {
  test("two ticks racing on a store that does not exist yet: one create wins, the other re-reads and decides again", async () => {
    w = await startWorld();
    // The first create is held up (below requestTimeout) while the other tick finds no store and creates it.
    w.api.faults.add({
      method: "POST",
      path: "/api/v1/namespaces/image-refresh/configmaps",
      times: 1,
      fault: { type: "delay", ms: 700 },
    });
    const [a, b] = await Promise.all([w.run(), w.run()]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const creates = w.api.log.filter((e) => `${e.method} ${e.path}` === CREATE).map((e) => e.status);
    expect(creates.sort()).toEqual([201, 409]);
    expect(`${a.stderr}${b.stderr}`).toContain("reading it again");
    expect(Object.keys(w.book()).sort()).toEqual([
      "last-refreshed-api-digest",
      "last-refreshed-node-agent-digest",
      // the registry's answer to GET /v2/ rides with the first write, under the registry's host
      `registry-challenge-${w.registry.host.replace(":", "_")}`,
    ]);
  });

  test("the upgrade from the shell job: migrated in one write, annotations removed, a new build of the other image rolls out, the locked one stays locked", async () => {
    w = await startWorld();
    const R = w.image("Deployment", "apps", "api", "api").split("@")[1] as string;
    const A = w.image("DaemonSet", "agents", "node-agent", "agent").split("@")[1] as string;
    // The shell job: kubectl annotate under its prefix, kubectl set image for every pin.
    w.api.setAnnotations(
      ...STATE,
      {
        "tracebloc.io/last-refreshed-api-digest": R,
        "tracebloc.io/last-refreshed-node-agent-digest": A,
        "tracebloc.io/refresh-attempt-node-agent": "3",
        "tracebloc.io/refresh-flap-detected-node-agent": "3",
        "tracebloc.io/refresh-skip-streak": "1",
      },
      { manager: "kubectl-annotate" },
    );
    w.api.setImage(
      "Deployment",
      "apps",
      "api-proxy",
      "proxy",
      `index.docker.io/myorg/api@${R}`.replace("index.docker.io", w.registry.host),
      { manager: "kubectl-set" },
    );
    w.writeConfig((c) => {
      c.state = { kind: STATE[0], namespace: STATE[1], name: STATE[2] };
      c.annotationPrefix = "tracebloc.io";
    });
    const next = w.registry.push("myorg/api", "stable");
    w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.clearLog();
    const r = await w.run();
    // node-agent is locked out (exit 1 every tick); api rolls out its new build.
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("api: refreshed");
    expect(r.stderr).toContain("node-agent: locked_out 3/3");
    expect(w.image("Deployment", "apps", "api-proxy", "proxy")).toBe(`${w.registry.host}/myorg/api@${next}`);
    // The first store write (a create) carried the migration.
    const create = w.api.log.find((e) => `${e.method} ${e.path}` === CREATE && e.status === 201);
    const created = JSON.parse(create?.body ?? "{}").data;
    expect(created).toMatchObject({
      "last-refreshed-api-digest": R,
      "last-refreshed-node-agent-digest": A,
      "refresh-attempt-node-agent": "3",
      "refresh-flap-detected-node-agent": "3",
      "refresh-attempt-api": "1",
    });
    // The shell's skip streak counted for api, whose targets settled this tick: removed in the same write.
    expect(created["skip-streak-api"]).toBeUndefined();
    expect(Object.keys(w.annotations()).filter((k) => k.startsWith("tracebloc.io/"))).toEqual([]);
    expect(w.book()["last-refreshed-api-digest"]).toBe(next);
    const again = await w.run();
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("node-agent: locked_out");
    expect(again.stderr).toContain("remove state from the config");
  });

  test("a workload replaced without annotations (kubectl replace, a re-created Deployment) loses nothing", async () => {
    w = await startWorld();
    await recorded(w);
    w.setBook({ "refresh-attempt-node-agent": "3", "refresh-flap-detected-node-agent": "3" });
    const before = w.book();
    w.api.update(...STATE, (o) => delete o.metadata.annotations, { manager: "kubectl-replace" });
    w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("node-agent: locked_out 3/3");
    expect(w.book()).toEqual(before);
  });
});

describe("lockout advice, reject and rearm", () => {
  const lockedOnBuild = async (): Promise<{ failed: string }> => {
    await recorded(w);
    const failed = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    w.api.failImages("DaemonSet", "agents", "node-agent", [`${w.registry.host}/myorg/node-agent@${failed}`]);
    for (let i = 0; i < 3; i++) expect((await w.run()).code).toBe(1);
    w.api.failImages("DaemonSet", "agents", "node-agent", []);
    return { failed };
  };

  test("a newer build after a lockout: the advice says rearm tries it; reject (no DIGEST) rejects the failed build, not the newer", async () => {
    w = await startWorld();
    const { failed } = await lockedOnBuild();
    const newer = w.registry.push("myorg/node-agent", "stable", { multiArch: true });
    const held = await w.run();
    expect(held.code).toBe(1);
    expect(held.stderr).toContain(`the last of build ${failed}; the registry now has a newer build ${newer}`);
    expect(held.stderr).toContain("`image-refresh rearm node-agent` to try it");
    const rej = await w.run(["reject", "node-agent"]);
    expect(rej.code).toBe(0);
    expect(w.book()["rejected-node-agent-digest"]).toBe(failed);
    expect(w.book()["refresh-attempt-node-agent"]).toBeUndefined();
    // Re-armed, the newer build rolls out.
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(w.image("DaemonSet", "agents", "node-agent", "agent")).toBe(
      `${w.registry.host}/myorg/node-agent@${newer}`,
    );
    // Each failed attempt waits out rolloutTimeout and reverts: several seconds of ticks.
  }, 30_000);

  test("rearm after reject clears the rejection; rearm says what it removed", async () => {
    w = await startWorld();
    const { failed } = await lockedOnBuild();
    expect((await w.run(["reject", "node-agent"])).code).toBe(0);
    expect(w.book()["rejected-node-agent-digest"]).toBe(failed);
    const r = await w.run(["rearm", "node-agent"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`removed rejected-node-agent-digest (was ${failed})`);
    expect(w.book()["rejected-node-agent-digest"]).toBeUndefined();
    // The lockout takes three failed attempts, each waiting out rolloutTimeout.
  }, 30_000);

  test("reject IMAGE DIGEST of a soaking candidate: that build never rolls out", async () => {
    let now = Date.parse("2026-12-01T10:00:00Z");
    w = await startWorld({ now: () => new Date(now) });
    w.writeConfig((c) => (c.minimumAge = "1h"));
    await recorded(w);
    const soaking = w.registry.push("myorg/api", "stable");
    expect((await w.run()).stderr).toContain("pending");
    const r = await w.run(["reject", "api", soaking]);
    expect(r.code).toBe(0);
    expect(w.book()["rejected-api-digest"]).toBe(soaking);
    now += 2 * 3600_000;
    const after = await w.run();
    expect(after.stderr).toContain("api: paused");
    expect(w.image("Deployment", "apps", "api", "api")).not.toContain(soaking);
  });
});

test("a tag moved back drops the withdrawn candidates: they never roll out", async () => {
  let now = Date.parse("2026-12-01T10:00:00Z");
  w = await startWorld({ now: () => new Date(now) });
  w.writeConfig((c) => (c.minimumAge = "1h"));
  await recorded(w);
  const R = w.book()["last-refreshed-api-digest"] as string;
  const withdrawn = w.registry.push("myorg/api", "stable");
  expect((await w.run()).stderr).toContain("pending");
  expect(w.book()["candidates-api"]).toContain(withdrawn);
  w.registry.retag("myorg/api", "stable", R);
  now += 2 * 3600_000;
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(w.book()["candidates-api"]).toBeUndefined();
  expect(w.image("Deployment", "apps", "api", "api")).toContain(R);
  expect(writes(w.api)).toContain(`PATCH ${STORE_PATH}`);
  void PREFIX;
  void runBinary;
});
