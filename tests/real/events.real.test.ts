// Every Event reason the product posts, produced by the compiled binary where a tick or command
// reaches it (refresh, re-pin, contested pin, pause, rollout failed and reverted, lockout,
// freeze, stale, reject), is accepted by the real events.k8s.io/v1 validation and shows in the
// real `kubectl events`; the one a cluster cannot be made to produce on demand (a revert that
// fails) is built by the product's own builder and posted by its own client. The server's
// validation is not a formality: the same Event without reportingController is a real 422.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildEvent, REPORTING_CONTROLLER } from "../../lib/kube/events.ts";
import { eventSubject } from "./book.ts";
import { ok } from "./kubectl.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { productClient } from "./product-client.ts";
import { logged, type Story, startStory, storyConfig, verdictOf } from "./story.ts";
import { messages } from "./tick.ts";

const missing = needPeers(["kube"], "tests/real/events.real.test.ts");
const NS = "ev";
const REPOS = ["web", "api", "db"];
/** The store's name (a ConfigMap in the story's namespace). */
const STORE = "image-refresh-state";

interface RealEvent {
  reason: string;
  type: string;
  note: string;
  reportingController: string;
  regarding: { kind: string; name: string };
}

describe.skipIf(missing)("Events on the real API server", () => {
  let s: Story;
  const seen = new Set<string>();
  /** The product's Events (the controllers post their own beside them). */
  const events = async (): Promise<RealEvent[]> =>
    (await s.c.cp.admin.get(`/apis/events.k8s.io/v1/namespaces/${NS}/events`)).items.filter(
      (e: RealEvent) => e.reportingController === REPORTING_CONTROLLER,
    );
  /** The tick's run said nothing about an Event it could not post. */
  const posted = (r: { lines: Array<Record<string, unknown>> }) =>
    expect(messages(r as never, "warn").filter((m) => m.includes("Event"))).toEqual([]);

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      for (const r of [...REPOS, "slow"]) x.reg.push(`${NS}/${r}`, "stable");
      return [
        deployment(NS, "web", { image: x.tag("web") }),
        deployment(NS, "api", { image: x.tag("api") }),
        deployment(NS, "db", { image: x.tag("db") }),
        deployment(NS, "ghost", { image: x.tag("ghost") }),
      ];
    });
    for (const w of [...REPOS, "ghost"]) await s.rolledOut(w);
    s.config(storyConfig(s, STORE, REPOS, { maxRefreshAttempts: 1 }));
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("refresh, re-pin, contest, pause, failure, revert, lockout and reject: posted by the binary", async () => {
    expect((await s.tick()).outcome).toBe("recorded");
    const adopt = await s.tick();
    expect(adopt.outcome).toBe("refreshed");
    posted(adopt);
    // A pin of a human's, and the tag rendered over a fresh re-pin before any tick found it.
    await ok(
      s.c.kubectl([
        "set",
        "image",
        "deployment/api",
        "-n",
        NS,
        `api=${s.pin("api", `sha256:${"a".repeat(64)}`)}`,
      ]),
      "pin api",
    );
    await ok(s.c.kubectl(["set", "image", "deployment/db", "-n", NS, `db=${s.tag("db")}`]), "re-render db");
    // The guard is per image: each image waits until its own targets settled, so both roll out first.
    for (const w of ["api", "db"]) await s.rolledOut(w);
    s.reg.push(`${NS}/web`, "stable");
    const third = await s.tick();
    expect(third.outcome).toBe("held");
    expect([verdictOf(third, "web"), verdictOf(third, "api"), verdictOf(third, "db")]).toEqual([
      "refreshed",
      "paused (kubectl-set)",
      "held (kubectl-set)",
    ]);
    posted(third);
    // web's pin in place (the third tick found it), a deploy tool renders the tag over it:
    // re-pinned, with a Warning naming the manager (an adoption's Event is a Normal one).
    await ok(
      s.c.kubectl(["set", "image", "deployment/web", "-n", NS, `web=${s.tag("web")}`]),
      "re-render web",
    );
    await s.rolledOut("web");
    const repin = await s.tick();
    expect(verdictOf(repin, "web")).toBe("refreshed");
    expect(logged(repin, "re-pinning web").length).toBe(1);
    posted(repin);
    // Never Ready, failed at rolloutTimeout (the Deployment has the default progress deadline).
    const bad = s.reg.push(`${NS}/web`, "stable");
    s.c.kubelet.build(bad, "never");
    s.config(storyConfig(s, STORE, REPOS, { maxRefreshAttempts: 1, rolloutTimeout: "8s" }));
    const failed = await s.tick();
    // With maxRefreshAttempts 1 the first failure reaches it: locked out on that tick.
    expect(verdictOf(failed, "web")).toBe("locked_out 1/1");
    posted(failed);
    const locked = await s.tick();
    expect(verdictOf(locked, "web")).toStartWith("locked_out");
    posted(locked);
    const rejected = await s.tick(["reject", "web"]);
    expect(rejected.code).toBe(0);
    posted(rejected);
    const reasons = new Set((await events()).map((e) => e.reason));
    for (const r of [
      "Pinned",
      "PinRestored",
      "Refreshed",
      "PinContested",
      "RefreshPaused",
      "RolloutFailed",
      "RolloutReverted",
      "RefreshLockedOut",
      "BuildRejected",
    ]) {
      expect(reasons).toContain(r);
      seen.add(r);
    }
  }, 300_000);

  test("freeze and stale: posted by the binary", async () => {
    const never = s.reg.push(`${NS}/slow`, "stable");
    s.c.kubelet.build(never, "never");
    await ok(
      s.c.kubectl(["apply", "-f", "-"], {
        stdin: JSON.stringify(deployment(NS, "slow", { image: s.pin("slow", never) })),
      }),
      "slow",
    );
    // Observed by the real controller and visibly not available: unsettled, not merely new.
    await ok(
      s.c.kubectl([
        "wait",
        "deployment/slow",
        "-n",
        NS,
        "--for=jsonpath={.status.unavailableReplicas}=1",
        "--timeout=60s",
      ]),
      "slow unavailable",
    );
    // The settled guard is per image: an image whose target does not settle is skipped, and
    // frozen at maxSkipTicks; an image the registry does not have goes stale. Each on a fresh
    // store, so no streak from the first test counts.
    const limits = { maxSkipTicks: 1, maxUnresolvedTicks: 1 };
    s.config(storyConfig(s, "frozen-book", ["slow"], limits));
    const frozen = await s.tick();
    expect([frozen.code, frozen.outcome]).toEqual([1, "frozen"]);
    posted(frozen);
    s.config(storyConfig(s, "stale-book", ["ghost"], limits));
    const stale = await s.tick();
    expect([stale.code, stale.outcome]).toEqual([1, "stale"]);
    posted(stale);
    const all = await events();
    const reasons = new Set(all.map((e) => e.reason));
    for (const x of ["RefreshFrozen", "ImageStale"]) {
      expect(reasons).toContain(x);
      seen.add(x);
    }
    // The freeze is about the workload that did not settle; the staleness about the image's target.
    const about = (r: string) => new Set(all.filter((e) => e.reason === r).map((e) => e.regarding.name));
    expect(about("RefreshFrozen")).toEqual(new Set(["slow"]));
    expect(about("ImageStale")).toEqual(new Set(["ghost"]));
  }, 180_000);

  test("a failed revert's Event, from the product's builder and client", async () => {
    const web = await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/web`);
    const kube = productClient(s.c);
    const body = buildEvent({
      regarding: { kind: "Deployment", metadata: web.metadata },
      type: "Warning",
      reason: "RevertFailed",
      action: "Refresh",
      note: `rollout of Deployment ${NS}/web did not settle (deadline_exceeded): ... (images web)`,
      reportingInstance: "image-refresh-test",
    });
    await kube.createEvent(NS, body);
    seen.add("RevertFailed");
    expect((await events()).map((e) => e.reason)).toContain("RevertFailed");
  }, 60_000);

  test("every Event is the product's, about the subject the book names, and shows in kubectl events", async () => {
    const all = await events();
    for (const e of all) {
      expect(e.type).toBe(["Refreshed", "Pinned"].includes(e.reason) ? "Normal" : "Warning");
    }
    // Each Event shows in `kubectl events --for` its object; the web Events where the book says.
    const bySubject = Map.groupBy(all, (e) => `${e.regarding.kind.toLowerCase()}/${e.regarding.name}`);
    expect(bySubject.has(eventSubject(s, STORE, "web"))).toBe(true);
    // Every Event is about a workload the stories configured (a target), none about the store.
    for (const subject of bySubject.keys())
      expect(["web", "api", "db", "slow", "ghost"].map((n) => `deployment/${n}`)).toContain(subject);
    for (const [subject, evs] of bySubject) {
      const out = await ok(s.c.kubectl(["events", "-n", NS, "--for", subject]), "kubectl events");
      for (const e of evs) expect(out).toContain(e.reason);
    }
    expect(new Set(all.map((e) => e.reason))).toEqual(seen);
    // Both APIs: the core/v1 view of the same Events carries the same reasons.
    const core = await s.c.cp.admin.get(`/api/v1/namespaces/${NS}/events`);
    const mine = core.items.filter(
      (e: { reportingComponent: string }) => e.reportingComponent === REPORTING_CONTROLLER,
    );
    expect(new Set(mine.map((e: { reason: string }) => e.reason))).toEqual(new Set(all.map((e) => e.reason)));
    expect(seen.size).toBe(12);
  }, 60_000);

  test("the same Event without reportingController (or eventTime) is the real 422", async () => {
    const web = await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/web`);
    const body = buildEvent({
      regarding: { kind: "Deployment", metadata: web.metadata },
      type: "Warning",
      reason: "RefreshLockedOut",
      action: "Refresh",
      note: "x",
      reportingInstance: "i",
    });
    for (const field of ["reportingController", "eventTime", "action"] as const) {
      const broken: Record<string, unknown> = {
        ...body,
        metadata: { ...body.metadata, name: `${body.metadata.name}-${field.toLowerCase()}` },
      };
      delete broken[field];
      const r = await s.c.cp.admin.request("POST", `/apis/events.k8s.io/v1/namespaces/${NS}/events`, {
        body: broken,
      });
      expect([field, r.status, r.body.reason]).toEqual([field, 422, "Invalid"]);
    }
    await expect(
      productClient(s.c).createEvent(NS, { ...body, reportingController: undefined }),
    ).rejects.toThrow(/422|Invalid|reportingController/);
  }, 60_000);
});
