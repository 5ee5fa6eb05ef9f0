// Preconditions on the real API server, with the compiled binary talking through a relay that
// acts between two of its requests: a concurrent write to the state object lands between the
// product's read and its resourceVersion-guarded write, so the real server answers 409 and the
// product re-reads and decides again (the refresh still happens, once, and the other writer's
// change survives); a container renamed between the product's read and its image patch makes
// the JSON-patch `test` guard fail with the real 422, and nothing is patched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readBook } from "./book.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Relay, type Seen, startRelay } from "./proxy.ts";
import { type Story, startStory, storyConfig } from "./story.ts";

const missing = needPeers(["kube"], "tests/real/preconditions.real.test.ts");
const NS = "pc";
const KEEPER = `/apis/apps/v1/namespaces/${NS}/deployments/keeper`;
const WEB = `/apis/apps/v1/namespaces/${NS}/deployments/web`;

/** A hook that runs `act` once, before the first request `when` matches is forwarded. */
function once(when: (r: Seen) => boolean, act: () => Promise<void>) {
  let done = false;
  return async (r: Seen) => {
    if (!done && when(r)) {
      done = true;
      await act();
      return { keep: true };
    }
    return undefined;
  };
}

describe.skipIf(missing)("preconditions on the real API server", () => {
  let s: Story;
  let relay: Relay;
  const statuses = (path: string) =>
    relay.log.filter((e) => e.path === path).map((e) => `${e.method} ${e.status}`);

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      x.reg.push(`${NS}/web`, "stable");
      return [
        deployment(NS, "keeper", { image: "example.test/keeper:1" }),
        deployment(NS, "web", { image: x.tag("web") }),
      ];
    });
    for (const w of ["keeper", "web"]) await s.rolledOut(w);
    s.config(storyConfig(s, "keeper", ["web"]));
    expect((await s.tick()).outcome).toBe("recorded");
    expect((await s.tick()).outcome).toBe("refreshed");
    relay = startRelay(s.c);
  }, 240_000);
  afterAll(async () => {
    relay?.stop();
    await s?.stop();
  });

  test("a write between the read and the guarded write is a real 409: re-read, decided again, refreshed once", async () => {
    const next = s.reg.push(`${NS}/web`, "stable");
    relay.log.length = 0;
    relay.hook = once(
      (r) => r.method === "PATCH" && r.url.pathname === KEEPER && r.body.includes('"resourceVersion"'),
      async () => {
        const w = await s.c.cp.admin.request("PATCH", KEEPER, {
          body: { metadata: { annotations: { "other.example/touched": "yes" } } },
          contentType: "application/merge-patch+json",
        });
        expect(w.status).toBe(200);
      },
    );
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    const keeper = statuses(KEEPER);
    // The first guarded write lost the race; the state object was read again before the next.
    const lost = keeper.indexOf("PATCH 409");
    expect(lost).toBeGreaterThanOrEqual(0);
    const conflict = JSON.parse(relay.log.find((e) => e.status === 409)?.text ?? "{}");
    expect([conflict.reason, conflict.code]).toEqual(["Conflict", 409]);
    expect(keeper.slice(lost + 1)).toContain("GET 200");
    expect(keeper.indexOf("GET 200", lost)).toBeLessThan(keeper.indexOf("PATCH 200", lost));
    // One rollout of web, to the new build; the other writer's annotation is still there.
    expect(relay.log.filter((e) => e.method === "PATCH" && e.path === WEB).map((e) => e.status)).toEqual([
      200,
    ]);
    expect(await s.image("web")).toBe(s.pin("web", next));
    const book = await readBook(s, "keeper");
    expect(book["last-refreshed-web-digest"]).toBe(next);
    expect(book["refresh-attempt-web"]).toBeUndefined();
    const keeperObj = await s.c.cp.admin.get(KEEPER);
    expect(keeperObj.metadata.annotations["other.example/touched"]).toBe("yes");
  }, 180_000);

  test("a container renamed between the read and the patch: the `test` guard is a real 422 and nothing is patched", async () => {
    const before = await s.c.cp.admin.get(WEB);
    const oldImage = before.spec.template.spec.containers[0].image;
    s.reg.push(`${NS}/web`, "stable");
    relay.log.length = 0;
    let sent = "";
    relay.hook = once(
      (r) => r.method === "PATCH" && r.url.pathname === WEB,
      async () => {
        const w = await s.c.cp.admin.request("PATCH", WEB, {
          body: [{ op: "replace", path: "/spec/template/spec/containers/0/name", value: "renamed" }],
          contentType: "application/json-patch+json",
        });
        expect(w.status).toBe(200);
      },
    );
    const hook = relay.hook;
    relay.hook = async (r) => {
      if (r.method === "PATCH" && r.url.pathname === WEB && !sent) sent = r.body;
      return hook(r);
    };
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    expect(r.code).toBe(1);
    expect(JSON.parse(sent)).toContainEqual({
      op: "test",
      path: "/spec/template/spec/containers/0/name",
      value: "web",
    });
    expect(relay.log.filter((e) => e.method === "PATCH" && e.path === WEB).map((e) => e.status)).toEqual([
      422,
    ]);
    const after = await s.c.cp.admin.get(WEB);
    expect(
      after.spec.template.spec.containers.map((c: { name: string; image: string }) => [c.name, c.image]),
    ).toEqual([["renamed", oldImage]]);
    // Only the rename moved the generation: the product's patch changed nothing.
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    // The next tick finds the configured container gone and holds the image without a patch.
    relay.log.length = 0;
    const next = await s.tick(undefined, relay.kubeconfig);
    expect([next.code, next.outcome, next.reason]).toEqual([1, "held", "target_unavailable"]);
    expect(relay.log.filter((e) => e.method === "PATCH" && e.path === WEB)).toEqual([]);
  }, 180_000);
});
