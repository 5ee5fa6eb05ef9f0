// The registry's answer to GET /v2/ kept in the store (registry-challenge-<host>), with the compiled
// binary: the first tick's write carries it, a no-op tick then asks for the token without a probe
// and writes nothing, and a stored answer that points elsewhere is not followed but replaced.
import { expect, test } from "bun:test";
import { type World, writes } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

let w: World;
worldPerTest((world) => {
  w = world;
  KEY = `registry-challenge-${world.registry.host.replace(":", "_")}`;
});

// Kept per registry host, the port's ":" written "_" (a ConfigMap key has no ":").
let KEY = "";
const LEGACY_KEY = "registry-challenge";
const registrySent = () => w.registry.log.map((e) => `${e.method} ${e.path}`);
const ownAnswer = () => `${w.registry.url} Bearer realm="${w.registry.url}/token",service="sim-registry"`;

test("the first tick stores the answer with its record; the next no-op tick sends no probe and writes nothing", async () => {
  const first = await w.run();
  expect(first.code).toBe(0);
  expect(first.stderr).toContain("outcome=recorded");
  expect(registrySent()[0]).toBe("GET /v2/");
  expect(w.book()[KEY]).toBe(ownAnswer());
  w.api.clearLog();
  w.registry.clearLog();
  const next = await w.run();
  expect(next.code).toBe(0);
  expect(next.stderr).toContain("outcome=noop");
  expect(registrySent()).toEqual([
    "GET /token",
    "HEAD /v2/myorg/api/manifests/stable",
    "HEAD /v2/myorg/node-agent/manifests/stable",
  ]);
  expect(writes(w.api)).toEqual([]);
});

test("an answer naming a realm on another origin is not followed: the tick probes and puts its own answer back", async () => {
  expect((await w.run()).code).toBe(0);
  const elsewhere = `${w.registry.url} Bearer realm="https://127.0.0.1:9/token",service="sim-registry"`;
  w.setBook({ [KEY]: elsewhere });
  w.api.clearLog();
  w.registry.clearLog();
  const r = await w.run();
  expect(r.code).toBe(0);
  expect(r.stderr).toContain("outcome=noop");
  expect(registrySent().slice(0, 2)).toEqual(["GET /v2/", "GET /token"]);
  expect(w.book()[KEY]).toBe(ownAnswer());
});

test("an installation whose store has no answer yet: a no-op tick probes, and still writes nothing", async () => {
  expect((await w.run()).code).toBe(0);
  w.setBook({ [KEY]: null });
  w.api.clearLog();
  w.registry.clearLog();
  const r = await w.run();
  expect(r.stderr).toContain("outcome=noop");
  expect(registrySent()[0]).toBe("GET /v2/");
  expect(writes(w.api)).toEqual([]);
  expect(w.book()[KEY]).toBeUndefined();
});

test("a store written by the version before (one answer, no host) is read as before, and moved under the host by the next write", async () => {
  expect((await w.run()).code).toBe(0);
  w.setBook({ [KEY]: null, [LEGACY_KEY]: ownAnswer() });
  w.api.clearLog();
  w.registry.clearLog();
  // A no-op tick: no probe (the old answer is believed), nothing written.
  const noop = await w.run();
  expect(noop.stderr).toContain("outcome=noop");
  expect(registrySent()[0]).toBe("GET /token");
  expect(writes(w.api)).toEqual([]);
  expect(w.book()[LEGACY_KEY]).toBe(ownAnswer());
  // A tick that writes anyway (a new build: its attempt count) moves the answer.
  w.registry.push("myorg/api", "stable");
  w.registry.clearLog();
  const r = await w.run();
  expect(r.stderr).toContain("outcome=refreshed");
  expect(registrySent()[0]).toBe("GET /token");
  expect(w.book()[LEGACY_KEY]).toBeUndefined();
  expect(w.book()[KEY]).toBe(ownAnswer());
});
