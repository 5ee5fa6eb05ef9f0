// minimumAge end to end (a new build waits as a candidate until it is old enough): the compiled
// binary against the simulated cluster, whose clock the test moves; the tick's clock is the API
// server's `Date`, never the test machine's. A build waits in candidates-api until first-seen +
// minimumAge by that clock.
import { afterEach, describe, expect, test } from "bun:test";
import { createKubeClient } from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { noopTelemetry } from "../../lib/telemetry.ts";
import { tickClock } from "../../lib/tick/observe.ts";
import { PREFIX, recorded, startWorld, type World } from "../support/world.ts";

const CANDIDATES = `${PREFIX}/candidates-api`;
const RECORDED = `${PREFIX}/last-refreshed-api-digest`;
const T0 = Date.parse("2026-12-01T12:00:00Z");
const MIN = 60_000;
const H = 60 * MIN;
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

let w: World | undefined;
let clock = T0;
afterEach(async () => {
  await w?.stop();
  w = undefined;
});

/** A world whose API server's clock is `clock`, api's first observation recorded, minimumAge 6h. */
async function soakWorld(minimumAge = "6h"): Promise<World> {
  clock = T0;
  const world = await startWorld({ now: () => new Date(clock) });
  w = world;
  world.writeConfig((c) => (c.minimumAge = minimumAge));
  await recorded(world);
  return world;
}

const pin = (world: World, digest: string) => `${world.registry.host}/myorg/api@${digest}`;
const apiImage = (world: World) => world.image("Deployment", "apps", "api", "api");
const proxyImage = (world: World) => world.image("Deployment", "apps", "api-proxy", "proxy");
const push = (world: World) => world.registry.push("myorg/api", "stable");
const patchesOf = (world: World) =>
  world.api.log.filter((e) => e.method === "PATCH" && e.status < 300).length;

async function tick(world: World) {
  const r = await world.run();
  return { ...r, out: r.stdout + r.stderr };
}

describe("soak: minimumAge against the API server's clock", () => {
  test("pending until the server clock passes first seen + minimumAge, then rolled out; nothing written while it waits", async () => {
    const world = await soakWorld();
    const before = apiImage(world);
    const build = push(world);
    let r = await tick(world);
    expect(r.code).toBe(0);
    expect(r.out).toContain("api: pending");
    expect(r.out).toContain(`due ${at(T0 + 6 * H)}`);
    expect(world.ours()[CANDIDATES]).toBe(`${build}=${at(T0)}`);
    expect(apiImage(world)).toBe(before);

    clock = T0 + 6 * H - 1000;
    world.api.clearLog();
    r = await tick(world);
    expect(r.code).toBe(0);
    expect(r.out).toContain("api: pending");
    expect(patchesOf(world)).toBe(0);
    expect(apiImage(world)).toBe(before);

    clock = T0 + 6 * H;
    r = await tick(world);
    expect(r.code).toBe(0);
    expect(r.out).toContain("api: refreshed");
    expect(apiImage(world)).toBe(pin(world, build));
    expect(proxyImage(world)).toBe(pin(world, build));
    expect(world.ours()[RECORDED]).toBe(build);
    expect(world.ours()[CANDIDATES]).toBeUndefined();
  }, 60_000);

  test("a tag that moves every tick under a soak still rolls out its oldest candidate once it aged (the ratchet)", async () => {
    const world = await soakWorld();
    const builds: string[] = [];
    for (let i = 0; i < 4; i++) {
      clock = T0 + i * 2 * H;
      builds.push(push(world));
      const r = await tick(world);
      expect(r.code).toBe(0);
      expect(r.out).toContain(i < 3 ? "api: pending" : "api: refreshed");
    }
    const [b1, b2, b3, b4] = builds as [string, string, string, string];
    expect(apiImage(world)).toBe(pin(world, b1));
    expect(world.ours()[RECORDED]).toBe(b1);
    // The newer builds wait on with their first-seen times; the rolled-out one is gone.
    const left = [b4, b3, b2].map((b, i) => `${b}=${at(T0 + (3 - i) * 2 * H)}`);
    expect(world.ours()[CANDIDATES]).toBe(left.join(","));
  }, 60_000);

  test("a pending build replaced before it aged and trimmed from the middle of the list (at most 5, the oldest kept) never rolls out; the others roll out in order", async () => {
    const world = await soakWorld();
    const builds: string[] = [];
    for (let i = 0; i < 6; i++) {
      clock = T0 + i * 30 * MIN;
      builds.push(push(world));
      expect((await tick(world)).code).toBe(0);
    }
    const list = (world.ours()[CANDIDATES] ?? "").split(",").map((e) => e.split("=")[0]);
    expect(list).toEqual([5, 4, 3, 2, 0].map((i) => builds[i]));
    // Ticks every 30 minutes from T0 + 3h until the last build has aged; the tag stays on it.
    const rolledOut: string[] = [];
    for (let t = T0 + 3 * H; t <= T0 + 9 * H; t += 30 * MIN) {
      clock = t;
      const r = await tick(world);
      expect(r.code).toBe(0);
      const now = world.ours()[RECORDED] as string;
      if (rolledOut[rolledOut.length - 1] !== now && builds.includes(now)) rolledOut.push(now);
      expect(apiImage(world)).toBe(pin(world, now));
    }
    expect(rolledOut).toEqual([0, 2, 3, 4, 5].map((i) => builds[i] as string));
    expect(world.ours()[CANDIDATES]).toBeUndefined();
  }, 120_000);

  test("minimumAge 0s is today's behaviour: the new build rolls out at once and no candidates are written", async () => {
    const world = await soakWorld("0s");
    const build = push(world);
    const r = await tick(world);
    expect(r.code).toBe(0);
    expect(r.out).toContain("api: refreshed");
    expect(apiImage(world)).toBe(pin(world, build));
    expect(Object.keys(world.ours()).filter((k) => k.includes("candidates"))).toEqual([]);
  }, 60_000);

  test("an unreadable candidates value: a WARNING names it, the list is rewritten, the build waits its full age", async () => {
    const world = await soakWorld();
    const build = push(world);
    world.setBook({ [CANDIDATES]: "not-a-list" });
    const r = await tick(world);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/WARNING: .*candidates-api has entries that are not/);
    expect(world.ours()[CANDIDATES]).toBe(`${build}=${at(T0)}`);
  }, 60_000);
});

describe("status under a soak", () => {
  test("shows each candidate with its age and when it is due, by the API server's clock", async () => {
    const world = await soakWorld();
    const b1 = push(world);
    await tick(world);
    clock = T0 + 2 * H;
    const b2 = push(world);
    await tick(world);
    clock = T0 + 7 * H - 30_000;
    const r = await world.run(["status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("candidates (minimumAge), newest first:");
    expect(r.stdout).toContain(
      `${b2} first seen ${at(T0 + 2 * H)} (4h59m30s ago), due ${at(T0 + 8 * H)} (in 1h30s)`,
    );
    expect(r.stdout).toContain(`${b1} first seen ${at(T0)} (6h59m30s ago), aged`);
    // A forecast, not a deed (the headline changed from REFRESHED with the past/future rule).
    expect(r.stdout).toContain("REFRESH DUE (digest_changed)");
    const json = JSON.parse((await world.run(["status", "--json"])).stdout);
    const api = json.images.find((i: { key: string }) => i.key === "api");
    expect(api.candidates.map((x: { digest: string; due: boolean }) => [x.digest, x.due])).toEqual([
      [b2, false],
      [b1, true],
    ]);
    expect(api.candidates[0].ageSeconds).toBe(5 * 3600 - 30);
  }, 60_000);
});

describe("the tick's clock: the API server's Date header", () => {
  test("the simulated API server's Date follows its settable clock (IMF-fixdate, whole seconds)", async () => {
    const world = await soakWorld();
    clock = T0 + 1234;
    const kube = createKubeClient(
      { server: world.api.url, token: world.api.token, caPem: world.api.caPem, insecureSkipTlsVerify: false },
      {
        requestTimeoutMs: 2000,
        signal: new AbortController().signal,
        telemetry: noopTelemetry(),
        log: memoryLogger(),
      },
    );
    const { date } = await kube.getDated({ kind: "Deployment", namespace: "apps", name: "api" });
    expect(date).toBe("Tue, 01 Dec 2026 12:00:01 GMT");
  }, 30_000);

  test("missing or unreadable Date: the local clock, and a warning says so", () => {
    const lines: string[] = [];
    const log = {
      warn: (m: string) => lines.push(`warn ${m}`),
      debug: (m: string) => lines.push(`debug ${m}`),
    };
    const ctx = { now: () => T0 + 999, log } as never;
    expect(tickClock("Tue, 01 Dec 2026 12:00:01 GMT", ctx, true)).toBe(T0 + 1000);
    expect(lines).toEqual([]);
    expect(tickClock(null, ctx, true)).toBe(T0);
    expect(tickClock("2026-12-01T12:00:01Z", ctx, true)).toBe(T0);
    expect(tickClock(null, ctx, false)).toBe(T0);
    expect(lines[0]).toMatch(/^warn .*has no Date header; using this node's clock/);
    expect(lines[1]).toMatch(/^warn .*unreadable Date header "2026-12-01T12:00:01Z"/);
    expect(lines[2]).toMatch(/^debug /);
  });
});
