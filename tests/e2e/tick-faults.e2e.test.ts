// The tick under faults and bad input: what each failure must do (outcome, exit code, message), and
// that nothing is written that should not be.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateTls } from "../../sim/tls.ts";
import { recorded, STORE_PATH, storeKey, type World, writeStory, writes } from "../support/world.ts";
import { worldPerTest } from "../support/world-each.ts";

const k = storeKey;

let w: World;
worldPerTest((world) => {
  w = world;
});

describe("store unreadable", () => {
  // NotFound is an empty store (the first write creates it); every other failure ends the tick.
  const cases: Array<[string, object, RegExp]> = [
    ["403", { type: "status", code: 403, reason: "Forbidden", message: "forbidden" }, /Forbidden \(403\)/],
    ["500", { type: "status", code: 500, reason: "", message: "boom" }, /cannot read the store/],
    ["hang", { type: "hang" }, /Timeout|timed out/i],
  ];
  for (const [name, fault, re] of cases) {
    test(`${name}: exit 1 naming the reason, nothing written, registry not asked`, async () => {
      w.api.faults.add({ method: "GET", path: STORE_PATH, fault: fault as never });
      const r = await w.run();
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(re);
      expect(r.stderr).toContain("store_unreadable");
      expect(r.stderr).toContain("error:");
      expect(writes(w.api)).toEqual([]);
      expect(w.registry.counts().head).toBe(0);
    });
  }
});

describe("attempt write fails", () => {
  test("500: held, no workload patch", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "status", code: 500 } });
    const before = w.image("Deployment", "apps", "api", "api");
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("held:");
    expect(writes(w.api)).toEqual([`PATCH ${STORE_PATH}`]);
    expect(w.image("Deployment", "apps", "api", "api")).toBe(before);
  });

  test("409 on every try: re-read, decide again, never patch a workload", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.faults.add({
      method: "PATCH",
      path: STORE_PATH,
      fault: { type: "status", code: 409, reason: "Conflict" },
    });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(writes(w.api).every((x) => x === `PATCH ${STORE_PATH}`)).toBe(true);
    expect(w.api.log.filter((e) => e.method === "GET" && e.path === STORE_PATH).length).toBe(3);
    expect(w.registry.counts().head).toBe(2); // the registry is asked once per tick, not per round
  });

  test("one 409 then success: the refresh goes through on the second round", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.faults.add({
      method: "PATCH",
      path: STORE_PATH,
      times: 1,
      fault: { type: "status", code: 409, reason: "Conflict" },
    });
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("refreshed:");
  });
});

describe("after the rollout", () => {
  test("reset fails: exit 1 and the digest is not recorded", async () => {
    await recorded(w);
    const before = w.ours()[k("last-refreshed-api-digest")];
    w.registry.push("myorg/api", "stable");
    // The attempt write passes, then the reset (the next store write) fails.
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 1, fault: { type: "delay", ms: 0 } });
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, fault: { type: "status", code: 500 } });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "its attempt counter in ConfigMap image-refresh/image-refresh-state cannot be reset",
    );
    expect(r.stderr).toContain("outcome=failed reason=reset_failed");
    expect(w.ours()[k("last-refreshed-api-digest")]).toBe(before);
    expect(w.ours()[k("refresh-attempt-api")]).toBe("1");
  });

  test("digest record fails: exit 1, the reset already landed", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    // attempt write and reset pass; the digest record fails
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, times: 2, fault: { type: "delay", ms: 0 } });
    w.api.faults.add({ method: "PATCH", path: STORE_PATH, fault: { type: "status", code: 500 } });
    const r = await w.run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot record the digest");
    expect(r.stderr).toContain("outcome=failed reason=record_failed");
    expect(w.ours()[k("refresh-attempt-api")]).toBeUndefined();
  });
});

describe("registry faults are per image", () => {
  const cases: Array<[string, object]> = [
    ["500", { type: "status", code: 500 }],
    ["429", { type: "status", code: 429, retryAfter: 30 }],
    ["hang", { type: "hang" }],
  ];
  for (const [name, fault] of cases) {
    test(`${name} on one HEAD: a WARNING, that image unresolved (never noop), its streak counted`, async () => {
      await recorded(w);
      w.registry.faults.add({
        method: "HEAD",
        path: "/v2/myorg/api/manifests/stable",
        fault: fault as never,
      });
      const r = await w.run();
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("WARNING");
      expect(r.stderr).not.toContain("noop:");
      if (name === "429") {
        // A 429 is the registry's: myorg/api's HEAD went first and alone, so node-agent's was never sent.
        expect(r.stderr).toContain(
          "unresolved: api: unresolved 1/8 (rate_limited); node-agent: unresolved 1/8 (rate_limited)",
        );
        expect(writeStory(w.api)).toEqual(["unresolved api=1, unresolved node-agent=1"]);
      } else {
        expect(r.stderr).toContain("unresolved: api: unresolved 1/8");
        expect(writeStory(w.api)).toEqual(["unresolved api=1"]);
      }
    });
  }

  test("a 429 ends all requests to the registry for this tick and logs Retry-After", async () => {
    await recorded(w);
    w.registry.faults.add({
      method: "GET",
      path: "/token",
      fault: { type: "status", code: 429, retryAfter: 42 },
      times: 1,
    });
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("42");
    expect(w.registry.counts()).toMatchObject({ token: 1, head: 0 });
    expect(writeStory(w.api)).toEqual(["unresolved api=1, unresolved node-agent=1"]);
  });

  test("a 429's Retry-After is stored; until then no tick calls the registry; after it, the next tick does and removes it", async () => {
    await recorded(w);
    w.registry.faults.add({
      method: "HEAD",
      path: "/v2/myorg/api/manifests/stable",
      fault: { type: "status", code: 429, retryAfter: 3600 },
      times: 1,
    });
    const started = Date.now();
    const first = await w.run();
    expect(first.code).toBe(0);
    const stored = w.ours()[k(`registry-retry-after-${w.registry.host.replace(":", "_")}`)];
    expect(stored).toBeString();
    const at = Date.parse(stored as string);
    expect(at).toBeGreaterThanOrEqual(started + 3_590_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 3_610_000);
    // The next tick, five minutes later in real life: not a single request to the registry.
    w.registry.clearLog();
    const held = await w.run();
    expect(held.code).toBe(0);
    expect(w.registry.log).toEqual([]);
    expect(held.stderr).toContain(
      "unresolved: api: unresolved 2/8 (rate_limited); node-agent: unresolved 2/8 (rate_limited)",
    );
    // The stored time is the API server's clock + Retry-After; this node waits the same span.
    expect(held.stderr).toMatch(/not calling it before \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    // Once the time has passed, the registry is asked again and the stored time removed.
    w.setBook({
      [k(`registry-retry-after-${w.registry.host.replace(":", "_")}`)]: new Date(
        Date.now() - 1000,
      ).toISOString(),
    });
    const again = await w.run();
    expect(again.code).toBe(0);
    expect(w.registry.counts().head).toBe(2);
    expect(w.ours()[k(`registry-retry-after-${w.registry.host.replace(":", "_")}`)]).toBeUndefined();
    expect(w.ours()[k("unresolved-streak-api")]).toBeUndefined();
  });

  test("a pinned image is never resolved nor touched", async () => {
    w.writeConfig((c) => (c.images[0].pinned = true));
    const r = await w.run();
    expect(r.code).toBe(0);
    expect(w.registry.log.some((e) => e.path.includes("myorg/api/"))).toBe(false);
    expect(w.ours()[k("last-refreshed-api-digest")]).toBeUndefined();
  });
});

describe("dry run, bad input, security", () => {
  test("--dry-run writes nothing and logs what it would write", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    const r = await w.run(["tick", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(writes(w.api)).toEqual([]);
    expect(r.stderr).toContain("dry run: would PATCH");
    expect(r.stderr).toContain("dry run: would PATCH Deployment apps/api-proxy");
  });

  test("a bad config exits 2 naming every bad field, before any request", async () => {
    w.writeConfig((c) => {
      c.images[0].targets[1].kind = "Job";
      c.maxSkipTicks = "many";
    });
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("images[0].targets[1].kind");
    expect(r.stderr).toContain("maxSkipTicks");
    expect(w.api.log).toEqual([]);
    expect(w.registry.log).toEqual([]);
  });

  // Settings valid alone but not together must be config errors, not a failure mid-tick after
  // the state object was read (found by an audit of the config rules).
  test("a plain-http registry endpoint without insecure exits 2 before any request", async () => {
    w.writeConfig((c) => (c.registry.endpoint = w.registry.url.replace("https:", "http:")));
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("registry.endpoint: is plain http; set registry.insecure: true to allow it");
    expect([w.api.log.length, w.registry.log.length]).toEqual([0, 0]);
  });

  test("a repository that repeats the registry host exits 2 before any request", async () => {
    w.writeConfig((c) => {
      c.registry.host = "reg.example.com";
      c.registry.endpoint = w.registry.url;
      c.images[0].repository = "reg.example.com/myorg/api";
    });
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('images[0].repository: "reg.example.com/myorg/api" repeats the registry host');
    expect([w.api.log.length, w.registry.log.length]).toEqual([0, 0]);
  });

  // Logs: JSON is one object per line; text lines begin with [image-refresh].
  test("--log-format json: a configuration error is written as JSON lines", async () => {
    w.writeConfig((cfg) => {
      cfg.images[0].targets[1].kind = "Pod";
    });
    const r = await w.run(["tick", "--log-format", "json"]);
    expect(r.code).toBe(2);
    const lines = r.stderr.split("\n").filter((l) => l.trim() !== "");
    const notJson = lines.filter((l) => {
      try {
        JSON.parse(l);
        return false;
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    const error = JSON.parse(lines[0] as string);
    expect(error).toMatchObject({ level: "error", msg: expect.stringContaining("Invalid configuration") });
    expect(error.problems).toEqual([expect.stringContaining("images[0].targets[1].kind")]);
  });

  test("text: every line of a configuration error begins with [image-refresh]", async () => {
    w.writeConfig((cfg) => {
      cfg.images[0].targets[1].kind = "Pod";
      cfg.store.name = "Not_A_Name";
    });
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("images[0].targets[1].kind");
    const lines = r.stderr.split("\n").filter((l) => l !== "");
    expect(lines.filter((l) => !l.startsWith("[image-refresh]"))).toEqual([]);
  });
  test("a field error and an error across fields are named together", async () => {
    w.writeConfig((c) => {
      c.state = { kind: "Job", namespace: "apps", name: "api" };
      c.images[1].key = "api";
    });
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("state.kind");
    expect(r.stderr).toContain('images[1].key: "api" is already used by images[0]');
  });

  test("a missing registry credentials file exits 2 naming the field, before any request", async () => {
    const missing = join(w.dir, "no-such-pull-secret.json");
    w.writeConfig((c) => (c.registry.dockerConfigJson = missing));
    const r = await w.run();
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`registry.dockerConfigJson: Cannot read registry credentials from ${missing}`);
    expect(r.stderr).not.toContain("unexpected error");
    expect(w.api.log).toEqual([]);
    expect(w.registry.log).toEqual([]);
  });

  test("an API server certificate not signed by the configured CA is refused", async () => {
    const other = generateTls();
    const path = join(w.dir, "kubeconfig-wrong-ca");
    writeFileSync(path, w.api.kubeconfig({ caPem: other.caPem }));
    const r = await w.run(["tick", "--kubeconfig", path]);
    expect(r.code).toBe(1);
    expect(w.api.log).toEqual([]);
  });

  test("the token never appears in any output, text or JSON", async () => {
    await recorded(w);
    w.registry.push("myorg/api", "stable");
    w.api.setMode("Deployment", "apps", "api-proxy", "deadline");
    for (const format of ["text", "json"]) {
      const r = await w.run(["tick", "--log-format", format]);
      expect(r.stdout + r.stderr).not.toContain(w.api.token);
    }
  });

  test("JSON logs carry time, level, msg, trace_id and span_id", async () => {
    const r = await w.run(["tick", "--log-format", "json"]);
    const lines = r.stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) {
      expect(Object.keys(l)).toEqual(expect.arrayContaining(["time", "level", "msg", "trace_id", "span_id"]));
      expect(l.trace_id).toMatch(/^[0-9a-f]{32}$/);
    }
  });
});
