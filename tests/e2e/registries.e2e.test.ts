// Two registries in one installation, each image on its own registry and tag: the compiled binary
// against two simulated registries. Every per-registry rule holds per host: one registry's 429
// (its quota, its Retry-After) never touches the other's images, which are refreshed in the same
// tick; each is asked for one token with its own repositories' scopes; each remembered answer and
// Retry-After is kept under its own host; pins name the image's own registry.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { generateTls } from "../../sim/tls.ts";
import { startWorld, type World } from "../support/world.ts";

let w: World;
let b: SimRegistry;
let env: Record<string, string>;

const segment = (host: string) => host.replace(":", "_");
const heads = (r: SimRegistry) => r.log.filter((e) => e.method === "HEAD").map((e) => e.path);

beforeEach(async () => {
  w = await startWorld();
  const tls = generateTls();
  b = await startRegistry({ tls });
  // The binary trusts both registries' CAs (and the API server's, which is A's).
  const both = join(w.dir, "both-ca.pem");
  writeFileSync(both, `${readFileSync(w.caPath, "utf8")}\n${tls.caPem}`);
  env = { NODE_EXTRA_CA_CERTS: both };
  const agent = b.push("myorg/agent", "v2");
  w.api.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "agent-b",
    containers: [{ name: "agent", image: `${b.host}/myorg/agent@${agent}` }],
  });
  w.writeConfig((c) => {
    c.images.push({
      repository: "myorg/agent",
      key: "agent-b",
      tag: "v2",
      registry: { host: b.host },
      targets: [{ kind: "DaemonSet", namespace: "agents", name: "agent-b", container: "agent" }],
    });
  });
  const first = await w.run([], env);
  if (first.code !== 0) throw new Error(`first tick: exit ${first.code}\n${first.stderr}`);
  w.api.clearLog();
  w.registry.clearLog();
  b.clearLog();
});

afterEach(async () => {
  await b.stop();
  await w.stop();
});

describe("two registries, each image on its own", () => {
  test("the first tick records each image from its own registry and keeps each answer under its host", () => {
    const book = w.book();
    expect(book["last-refreshed-agent-b-digest"]).toMatch(/^sha256:/);
    expect(book["last-refreshed-api-digest"]).toMatch(/^sha256:/);
    expect(
      Object.keys(book)
        .filter((k) => k.startsWith("registry-challenge"))
        .sort(),
    ).toEqual(
      [`registry-challenge-${segment(w.registry.host)}`, `registry-challenge-${segment(b.host)}`].sort(),
    );
    expect(book[`registry-challenge-${segment(b.host)}`]).toStartWith(`${b.url} `);
  });

  test("a new build on each registry, each on its own tag: both refreshed in one tick", async () => {
    const api = w.registry.push("myorg/api", "stable");
    const agent = b.push("myorg/agent", "v2");
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    expect(w.image("Deployment", "apps", "api", "api")).toBe(`${w.registry.host}/myorg/api@${api}`);
    expect(w.image("DaemonSet", "agents", "agent-b", "agent")).toBe(`${b.host}/myorg/agent@${agent}`);
    expect(r.stderr).toContain("api: refreshed");
    expect(r.stderr).toContain("agent-b: refreshed");
  });

  test("a no-op tick: per registry one token request (its kept answer, no probe) and one HEAD per repository; nothing written", async () => {
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("outcome=noop");
    expect(w.registry.counts()).toEqual({ challenge: 0, token: 1, head: 2, get: 0 });
    expect(b.counts()).toEqual({ challenge: 0, token: 1, head: 1, get: 0 });
    expect(w.api.log.filter((e) => e.method !== "GET")).toEqual([]);
  });

  test("a 429 from one registry leaves the other's image refreshed in the same tick", async () => {
    w.registry.push("myorg/api", "stable");
    const next = b.push("myorg/agent", "v2");
    w.registry.faults.add({
      method: "HEAD",
      path: "/v2/myorg/api/manifests/stable",
      fault: { type: "status", code: 429, retryAfter: 3600 },
      times: 1,
    });
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    // The image on B: rolled out with B's host in the pin.
    expect(w.image("DaemonSet", "agents", "agent-b", "agent")).toBe(`${b.host}/myorg/agent@${next}`);
    expect(r.stderr).toContain("agent-b: refreshed");
    // A's first HEAD went alone and its 429 sent nothing more to A; B was asked for its one tag.
    expect(heads(w.registry)).toEqual(["/v2/myorg/api/manifests/stable"]);
    expect(heads(b)).toEqual(["/v2/myorg/agent/manifests/v2"]);
    expect(r.stderr).toContain("api: unresolved 1/8 (rate_limited)");
    expect(r.stderr).toContain("node-agent: unresolved 1/8 (rate_limited)");
    const book = w.book();
    expect(book[`registry-retry-after-${segment(w.registry.host)}`]).toBeString();
    expect(book[`registry-retry-after-${segment(b.host)}`]).toBeUndefined();

    // The next tick: A is held by its Retry-After (not a request), B is asked as usual.
    w.registry.clearLog();
    b.clearLog();
    const held = await w.run([], env);
    expect(held.code).toBe(0);
    expect(w.registry.log).toEqual([]);
    expect(heads(b)).toEqual(["/v2/myorg/agent/manifests/v2"]);
    expect(held.stderr).toContain(`registry ${w.registry.host} is rate limiting; not calling it before`);
    expect(held.stderr).not.toContain(`registry ${b.host} is rate limiting`);
  });

  test("each registry gets one token request carrying only its own repositories' scopes", async () => {
    // Forget the remembered answers, so that each registry is probed and asked for a token.
    w.setBook({
      [`registry-challenge-${segment(w.registry.host)}`]: null,
      [`registry-challenge-${segment(b.host)}`]: null,
    });
    w.registry.clearLog();
    b.clearLog();
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    const scopes = (reg: SimRegistry) =>
      reg.log.filter((e) => e.path.includes("token")).map((e) => [e.query.scope].flat().sort());
    expect(scopes(w.registry)).toEqual([["repository:myorg/api:pull", "repository:myorg/node-agent:pull"]]);
    expect(scopes(b)).toEqual([["repository:myorg/agent:pull"]]);
    expect(w.registry.counts()).toMatchObject({ challenge: 1, token: 1, head: 2 });
    expect(b.counts()).toMatchObject({ challenge: 1, token: 1, head: 1 });
  });

  test("one registry down (5xx) leaves the other's image refreshed", async () => {
    const next = b.push("myorg/agent", "v2");
    w.registry.faults.add({
      method: "HEAD",
      path: "/v2/myorg/api/manifests/stable",
      fault: { type: "status", code: 503 },
    });
    w.registry.faults.add({
      method: "HEAD",
      path: "/v2/myorg/node-agent/manifests/stable",
      fault: { type: "status", code: 503 },
    });
    const r = await w.run([], env);
    expect(r.code).toBe(0);
    expect(w.image("DaemonSet", "agents", "agent-b", "agent")).toBe(`${b.host}/myorg/agent@${next}`);
    expect(r.stderr).toContain("api: unresolved 1/8 (server_error)");
  });
});
