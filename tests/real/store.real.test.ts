// The store (image-refresh's own ConfigMap) on the real API server: created by the first write
// of a tick that found it NotFound; a create that loses the race to another writer meets the
// real 409 AlreadyExists, reads the store again and writes with its resourceVersion; two ticks
// at once leave one store holding the record. No workload carries the book: `kubectl replace`
// of every workload leaves it whole and the next tick in sync; and `kubectl rollout undo` of a
// locked-out target to an older pin is a human's pin (paused) that keeps the count, the marker
// and the failed digest, so handed back with the tag the image is still locked out.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readBook } from "./book.ts";
import { ok } from "./kubectl.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Relay, type Seen, startRelay } from "./proxy.ts";
import { type Story, startStory, storyConfig, verdictOf } from "./story.ts";

const missing = needPeers(["kube"], "tests/real/store.real.test.ts");
const NS = "st";
const STORE = "image-refresh-state";
const MAPS = `/api/v1/namespaces/${NS}/configmaps`;
const REPOS = ["web", "api"];
// The two ticks at once have a workload of their own: the tick that loses the race reads the
// winner's record and may pin the tag at once, which must not change what the later stories find.
const TWIN = "twin";

describe.skipIf(missing)("the store on the real API server", () => {
  let s: Story;
  let relay: Relay;
  const config = (store: string, extra: Record<string, unknown> = {}) =>
    s.config(storyConfig(s, store, REPOS, extra));
  const get = (store: string) => s.c.cp.admin.request("GET", `${MAPS}/${store}`);
  const calls = (path: string) =>
    relay.log.filter((e) => e.path === path).map((e) => `${e.method} ${e.status}`);

  let twinDigest: string;

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      for (const r of REPOS) x.reg.push(`${NS}/${r}`, "stable");
      twinDigest = x.reg.push(`${NS}/${TWIN}`, "stable");
      return [...REPOS, TWIN].map((r) => deployment(NS, r, { image: x.tag(r) }));
    });
    for (const r of [...REPOS, TWIN]) await s.rolledOut(r);
    relay = startRelay(s.c);
  }, 240_000);
  afterAll(async () => {
    relay?.stop();
    await s?.stop();
  });

  test("NotFound is an empty store; the first write creates it", async () => {
    config("first-book");
    expect((await get("first-book")).status).toBe(404);
    relay.log.length = 0;
    const r = await s.tick(undefined, relay.kubeconfig);
    expect([r.code, r.outcome]).toEqual([0, "recorded"]);
    expect(calls(`${MAPS}/first-book`)[0]).toBe("GET 404");
    expect(calls(MAPS)).toEqual(["POST 201"]);
    const book = await readBook(s, "first-book");
    for (const repo of REPOS) expect(book[`last-refreshed-${repo}-digest`]).toStartWith("sha256:");
  }, 120_000);

  test("a create that loses the race: the real AlreadyExists, read again, written with its resourceVersion", async () => {
    config("raced-book");
    relay.log.length = 0;
    let done = false;
    relay.hook = async (q: Seen) => {
      if (done || q.method !== "POST" || q.url.pathname !== MAPS) return undefined;
      done = true;
      // Another writer (another tick, say) creates the store first.
      const other = await s.c.cp.admin.request("POST", MAPS, {
        body: { metadata: { name: "raced-book", annotations: { "other.example/first": "yes" } }, data: {} },
      });
      expect(other.status).toBe(201);
      return { keep: true };
    };
    const r = await s.tick(undefined, relay.kubeconfig);
    relay.hook = undefined;
    expect([r.code, r.outcome]).toEqual([0, "recorded"]);
    expect(calls(MAPS)).toEqual(["POST 409"]);
    const lost = JSON.parse(relay.log.find((e) => e.path === MAPS)?.text ?? "{}");
    expect([lost.reason, lost.code]).toEqual(["AlreadyExists", 409]);
    const after = calls(`${MAPS}/raced-book`);
    expect(after.slice(-2)).toEqual(["GET 200", "PATCH 200"]);
    const patch = relay.log.findLast((e) => e.method === "PATCH" && e.path === `${MAPS}/raced-book`);
    expect(patch).toBeDefined();
    const held = await s.c.cp.admin.get(`${MAPS}/raced-book`);
    expect(held.metadata.annotations["other.example/first"]).toBe("yes");
    for (const repo of REPOS) expect(held.data[`last-refreshed-${repo}-digest`]).toStartWith("sha256:");
  }, 120_000);

  test("two ticks at once on a missing store: both succeed, one store holds the record", async () => {
    s.config(storyConfig(s, "twin-book", [TWIN]));
    const [a, b] = await Promise.all([s.tick(), s.tick()]);
    expect([a.code, b.code]).toEqual([0, 0]);
    // Both recorded the build; or one did, and the other, losing the store's create, read the
    // record and pinned the tag to it in the same tick.
    expect(["recorded recorded", "recorded refreshed"]).toContain([a.outcome, b.outcome].sort().join(" "));
    const book = await readBook(s, "twin-book");
    expect(book[`last-refreshed-${TWIN}-digest`]).toBe(twinDigest);
    const maps = (await s.c.cp.admin.get(MAPS)).items.map(
      (m: { metadata: { name: string } }) => m.metadata.name,
    );
    expect(maps.filter((n: string) => n === "twin-book")).toHaveLength(1);
  }, 120_000);

  test("kubectl replace of every workload leaves the book whole; the next tick is in sync", async () => {
    config(STORE);
    expect((await s.tick()).outcome).toBe("recorded");
    expect((await s.tick()).outcome).toBe("refreshed"); // adoption: the tag pinned to its digest
    for (const r of REPOS) await s.rolledOut(r);
    for (const r of REPOS) s.reg.push(`${NS}/${r}`, "stable");
    expect((await s.tick()).outcome).toBe("refreshed");
    for (const r of REPOS) await s.rolledOut(r);
    const before = await readBook(s, STORE);
    expect(Object.keys(before).length).toBeGreaterThan(0);
    for (const r of REPOS) {
      // The user's own manifest, carrying the image as it is now and nothing of image-refresh's.
      const mine = deployment(NS, r, { image: await s.image(r) });
      await ok(s.c.kubectl(["replace", "-f", "-"], { stdin: JSON.stringify(mine) }), `kubectl replace ${r}`);
      await s.rolledOut(r);
    }
    expect(await readBook(s, STORE)).toEqual(before);
    const next = await s.tick();
    expect([next.code, next.outcome]).toEqual([0, "noop"]);
    expect(await readBook(s, STORE)).toEqual(before);
  }, 240_000);

  test("kubectl rollout undo of a locked-out target: paused, the lockout kept; handed back, still locked out", async () => {
    // Continues the story above: web was adopted (an older pin) and then refreshed to R.
    const R = (await readBook(s, STORE))["last-refreshed-web-digest"] as string;
    expect(await s.image("web")).toBe(s.pin("web", R));
    const bad = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(bad, "never");
    config(STORE, { maxRefreshAttempts: 1, rolloutTimeout: "8s" });
    const failed = await s.tick();
    // With maxRefreshAttempts 1 the first failure reaches it: locked out on that tick.
    expect([failed.code, verdictOf(failed, "web")]).toEqual([1, "locked_out 1/1"]);
    await s.rolledOut("web");
    const locked = await s.tick();
    expect(locked.code).toBe(1);
    expect(verdictOf(locked, "web")).toStartWith("locked_out");
    const book = await readBook(s, STORE);
    expect(book["failed-web-digest"]).toBe(bad);
    expect(book["refresh-flap-detected-web"]).toBeDefined();
    // Revision 2 is the adoption's pin, older than R: the rollback a human would make.
    const history = await ok(s.c.kubectl(["rollout", "history", "deployment/web", "-n", NS]), "history");
    expect(history).toMatch(/^2\s/m);
    await ok(
      s.c.kubectl(["rollout", "undo", "deployment/web", "-n", NS, "--to-revision=2"]),
      "kubectl rollout undo",
    );
    await s.rolledOut("web");
    const older = await s.image("web");
    expect(older).toStartWith(`${s.reg.host}/${NS}/web@sha256:`);
    expect([older === s.pin("web", R), older === s.pin("web", bad)]).toEqual([false, false]);
    const paused = await s.tick();
    expect([paused.code, verdictOf(paused, "web")]).toEqual([0, expect.stringMatching(/^paused/)]);
    expect(await s.image("web")).toBe(older);
    const kept = await readBook(s, STORE);
    for (const k of [
      "last-refreshed-web-digest",
      "refresh-attempt-web",
      "refresh-flap-detected-web",
      "failed-web-digest",
    ])
      expect([k, kept[k]]).toEqual([k, book[k]]);
    // Handed back with the tag: still locked out, exit 1; the bad build is not tried.
    await ok(s.c.kubectl(["set", "image", "deployment/web", "-n", NS, `web=${s.tag("web")}`]), "hand back");
    await s.rolledOut("web");
    const back = await s.tick();
    expect(back.code).toBe(1);
    expect(verdictOf(back, "web")).toStartWith("locked_out");
    expect(await s.image("web")).not.toBe(s.pin("web", bad));
    expect((await readBook(s, STORE))["refresh-attempt-web"]).toBe(book["refresh-attempt-web"] as string);
  }, 300_000);
});
