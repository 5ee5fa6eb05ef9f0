// A Progressing condition left at ProgressDeadlineExceeded by an earlier rollout, on the real
// deployment controller: it keeps that reason until the Deployment is complete again, also after
// a new generation whose template brings back an existing ReplicaSet (a revert, a `rollout undo`)
// is observed. The wait for such a rollout must not read that condition as its verdict: a revert
// of one replica after a build that ran out of its deadline settles, and says so. A Deployment
// whose own last rollout (a human's) ran out of its deadline is not settled: its image is
// skipped, no attempt is counted against a build never tried, and it refreshes once a human
// undid that rollout. A revert that makes no progress at all (the old build broken too, once the
// new one is rolling) gets no condition of its own: the controller sees its Progressing condition
// already at ProgressDeadlineExceeded and leaves it as it is (SetDeploymentCondition keeps a
// condition of the same status and reason), so the revert's wait, which ignores that left-over
// condition, runs to rolloutTimeout and ends revert_failed (timeout).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { REPORTING_CONTROLLER } from "../../lib/kube/events.ts";
import { readBook } from "./book.ts";
import { ok } from "./kubectl.ts";
import { deployment } from "./manifests.ts";
import { needPeers } from "./peers.ts";
import { type Story, startStory, storyConfig, verdictOf } from "./story.ts";
import { messages } from "./tick.ts";

const missing = needPeers(["kube"], "tests/real/rollouts-deadline.real.test.ts");
const NS = "linger";
const STORE = "image-refresh-state";
const DEADLINE_S = 4;
const NEVER = `sha256:${"e".repeat(64)}`;

describe.skipIf(missing)("a progress deadline left over from an earlier rollout", () => {
  let s: Story;
  const deploymentPath = (name: string) => `/apis/apps/v1/namespaces/${NS}/deployments/${name}`;
  const progressing = async (name: string) =>
    (await s.c.cp.admin.get(deploymentPath(name))).status.conditions.find(
      (c: { type: string }) => c.type === "Progressing",
    );
  const eventReasons = async (): Promise<string[]> =>
    (await s.c.cp.admin.get(`/apis/events.k8s.io/v1/namespaces/${NS}/events`)).items
      .filter((e: { reportingController: string }) => e.reportingController === REPORTING_CONTROLLER)
      .map((e: { reason: string }) => e.reason);
  const kubectl = (args: string[], what: string) => ok(s.c.kubectl([...args, "-n", NS]), what);

  beforeAll(async () => {
    s = await startStory(NS, (x) => {
      for (const r of ["one", "hand", "two"]) x.reg.push(`${NS}/${r}`, "stable");
      return [
        deployment(NS, "one", { image: x.tag("one"), progressDeadlineSeconds: DEADLINE_S }),
        deployment(NS, "two", { image: x.tag("two"), progressDeadlineSeconds: DEADLINE_S }),
        deployment(NS, "hand", {
          containers: [
            { name: "hand", image: x.tag("hand") },
            { name: "side", image: "example.test/side:1" },
          ],
          progressDeadlineSeconds: DEADLINE_S,
        }),
      ];
    });
    for (const w of ["one", "hand", "two"]) await s.rolledOut(w);
    s.config(storyConfig(s, STORE, ["one", "hand", "two"]));
    expect((await s.tick()).outcome).toBe("recorded");
    const adopt = await s.tick();
    expect([adopt.code, adopt.outcome]).toEqual([0, "refreshed"]);
  }, 240_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("one replica: the revert after a build past its deadline settles and is reported reverted", async () => {
    s.config(storyConfig(s, STORE, ["one"]));
    const before = await s.image("one");
    const bad = s.reg.push(`${NS}/one`, "stable");
    s.c.kubelet.build(bad, "never");
    const r = await s.tick();
    const problems = [...messages(r, "error"), ...messages(r, "warn")].filter((m) =>
      m.includes("the revert did not settle"),
    );
    expect(problems).toEqual([]);
    expect([r.code, r.outcome, r.reason]).toEqual([1, "failed", "rollout_failed_reverted"]);
    expect(verdictOf(r, "one")).toEndWith("(reverted)");
    // The forward wait ended on the controller's condition, the revert's wait on completion.
    expect(messages(r, "info")).toContain(`deployment "one" exceeded its progress deadline`);
    expect(messages(r, "info")).toContain(
      `Deployment ${NS}/one is back on its old images: deployment "one" successfully rolled out; verified for 2s`,
    );
    expect(await s.image("one")).toBe(before);
    expect(await eventReasons()).toContain("RolloutReverted");
    expect(await eventReasons()).not.toContain("RevertFailed");
    expect((await progressing("one")).reason).toBe("NewReplicaSetAvailable");
    // One attempt used; the next build rolls out.
    expect((await readBook(s, STORE))["refresh-attempt-one"]).toBe("1");
    const good = s.reg.push(`${NS}/one`, "stable");
    const next = await s.tick();
    expect([next.code, next.outcome]).toEqual([0, "refreshed"]);
    expect(await s.image("one")).toBe(s.pin("one", good));
  }, 180_000);

  test("a human's rollout past its deadline holds the image without an attempt; after the undo it refreshes", async () => {
    s.config(storyConfig(s, STORE, ["hand"]));
    s.c.kubelet.build(NEVER, "never");
    await kubectl(["set", "image", "deployment/hand", `side=example.test/side@${NEVER}`], "set image");
    await kubectl(
      [
        "wait",
        "deployment/hand",
        "--for=jsonpath={.status.conditions[?(@.type=='Progressing')].reason}=ProgressDeadlineExceeded",
        "--timeout=60s",
      ],
      "the human's rollout runs out of its deadline",
    );
    const next = s.reg.push(`${NS}/hand`, "stable");
    const held = await s.tick();
    expect([held.code, held.outcome]).toEqual([0, "skipped"]);
    expect(verdictOf(held, "hand")).toStartWith("skipped");
    expect(messages(held, "info").join("\n")).toContain(
      `hand: Deployment ${NS}/hand not settled (deployment "hand" exceeded its progress deadline), skip 1/`,
    );
    expect((await readBook(s, STORE))["refresh-attempt-hand"]).toBeUndefined();
    // The undo brings the old ReplicaSet back; the condition says exceeded until it completes.
    await kubectl(["rollout", "undo", "deployment/hand"], "undo");
    await s.rolledOut("hand");
    const r = await s.tick();
    expect([r.code, r.outcome]).toEqual([0, "refreshed"]);
    expect(await s.image("hand")).toBe(s.pin("hand", next));
  }, 180_000);

  test("the old build broken too: the revert makes no progress, keeps the old condition, and ends revert_failed at rolloutTimeout", async () => {
    s.config(storyConfig(s, STORE, ["two"], { rolloutTimeout: "15s" }));
    const old = (await s.image("two")).split("@")[1] as string;
    const bad = s.reg.push(`${NS}/two`, "stable");
    s.c.kubelet.build(bad, "never");
    const started = Date.now();
    const run = s.tick();
    // Once the tick has re-imaged it, the build it would go back to stops being Ready too.
    for (let i = 0; i < 300 && (await s.image("two")) !== s.pin("two", bad); i++) await Bun.sleep(50);
    expect(await s.image("two")).toBe(s.pin("two", bad));
    s.c.kubelet.build(old, "never");
    const r = await run;
    const elapsed = Date.now() - started;
    expect([r.code, r.reason]).toEqual([1, "revert_failed"]);
    const said = messages(r, "error").join("\n");
    // The forward wait ended on the controller's condition, the revert's at rolloutTimeout.
    expect(said).toContain(`rollout of Deployment ${NS}/two did not settle (deadline_exceeded)`);
    expect(said).toContain(`the revert did not settle: Deployment ${NS}/two (timeout)`);
    expect(elapsed).toBeGreaterThan(15_000);
    expect(elapsed).toBeLessThan(45_000);
    expect(await eventReasons()).toContain("RevertFailed");
    // Still the forward rollout's condition: nothing new was written for the revert.
    const p = await progressing("two");
    expect(p.reason).toBe("ProgressDeadlineExceeded");
  }, 180_000);
});
