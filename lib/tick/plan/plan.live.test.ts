// plan() against the live spec of the targets: a tag re-rendered over the pin, a
// human's pin, a contested pin, a container that runs another repository. Same base world and
// table shape as plan.test.ts; one tweak per case, every action compared whole.
import { describe, expect, test } from "bun:test";
import {
  API_C,
  ann,
  both,
  type Case,
  config,
  D,
  helm,
  newAgent,
  newApi,
  observed,
  REFRESH_AGENT,
  REFRESH_API,
  roll,
  runCases,
  write,
} from "../../../tests/support/plan-tables.ts";
import type { FieldOwner } from "../../kube/managed-fields.ts";
import type { Observed } from "../model.ts";
import { plan } from "./plan.ts";

const API_A = `docker.io/myorg/api@${D("a")}`;
const human: FieldOwner = { manager: "kubectl-set", operation: "Update", time: "2026-12-01T12:00:00Z" };
const argo: FieldOwner = { manager: "argocd-controller", operation: "Update", time: "2026-12-01T12:00:00Z" };

/** Sets one container's live image and who wrote it. */
const live = (workload: string, container: string, image: string, owner?: FieldOwner) => (o: Observed) => {
  const w = o.workloads?.[workload];
  if (!w?.found) throw new Error(`no ${workload} in the base world`);
  w.images[container] = image;
  w.owners = { ...w.owners, [container]: owner ? [owner] : [] };
};
const apiRendered = live("Deployment/apps/api", "api", "myorg/api:stable", helm);
/** `kubectl rollout undo` names no field manager: the API server records its User-Agent. */
const undo: FieldOwner = { manager: "kubectl", operation: "Update", time: "2026-12-01T12:00:00Z" };
const ours: FieldOwner = { manager: "image-refresh", operation: "Update", time: "2026-12-01T11:00:00Z" };
/** `kubectl rollout undo` of Deployment api: its pin to an older build came back; the store was not touched. */
const API_OLD = `docker.io/myorg/api@${D("0")}`;
const rolledBack = both(newApi, live("Deployment/apps/api", "api", API_OLD, undo));
const proxyRendered = live("Deployment/apps/api-proxy", "proxy", "docker.io/myorg/api:stable", helm);
const REPIN_API = `docker.io/myorg/api@${D("a")}`;

const cases: Case[] = [
  {
    name: "Helm re-rendered the tag over the pin: one counted re-pin of that container only, streak 1, PinRestored after",
    o: apiRendered,
    outcome: "refreshed",
    reason: "pin_restored",
    images: { api: "refreshed/pin_restored", "node-agent": "noop/unchanged" },
    actions: [
      write({ attempts: { api: 1 }, repins: ["api"], change: { [`repin-streak-api`]: "1" } }),
      roll("api", [["api", REPIN_API]], ["api"]),
      { type: "reset", counts: { api: 1 } },
      { type: "pin-restored", images: ["api"] },
    ],
  },
  {
    name: "re-rendered again while the repin streak is there: contested, held, one Warning Event, no rollout",
    o: both(apiRendered, (o) => ann(o, "repin-streak-api", "1")),
    outcome: "held",
    reason: "pin_contested",
    images: { api: "held/pin_contested", "node-agent": "noop/unchanged" },
    actions: [
      write({ change: { [`repin-streak-api`]: "2" } }),
      {
        type: "event",
        eventType: "Warning",
        reason: "PinContested",
        note: expect.any(String) as never,
        image: "api",
      },
    ],
  },
  {
    name: "the tag put back by image-refresh's own revert of a failed re-pin is re-pinned again (attempt 2), not contested",
    o: both(
      live("Deployment/apps/api", "api", "myorg/api:stable", {
        manager: "image-refresh",
        operation: "Update",
      }),
      (o) => ann(o, "repin-streak-api", "1"),
      (o) => ann(o, "refresh-attempt-api", "1"),
    ),
    outcome: "refreshed",
    reason: "pin_restored",
    actions: [
      write({ attempts: { api: 2 }, repins: ["api"] }),
      roll("api", [["api", REPIN_API]], ["api"]),
      { type: "reset", counts: { api: 2 } },
      { type: "pin-restored", images: ["api"] },
    ],
  },
  {
    name: "the tick that lost the race re-reads the winner's repin streak: it stands down, no contest, no Event",
    o: both(
      apiRendered,
      (o) => ann(o, "repin-streak-api", "1"),
      (o) => ann(o, "refresh-attempt-api", "1"),
      (o) => {
        o.claimed = ["api"];
      },
    ),
    outcome: "held",
    reason: "attempt_claimed",
    images: { api: "held/attempt_claimed", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a contest already announced stays held with no write and no Event",
    o: both(apiRendered, (o) => ann(o, "repin-streak-api", "2")),
    outcome: "held",
    reason: "pin_contested",
    actions: [],
  },
  {
    name: "an untrusted repin streak is a contest too: no re-pin, nothing written",
    o: both(apiRendered, (o) => ann(o, "repin-streak-api", "yes")),
    outcome: "held",
    reason: "pin_contested",
    actions: [],
  },
  {
    name: "the first tick that finds every target pinned removes the repin streak",
    o: (o) => ann(o, "repin-streak-api", "1"),
    outcome: "noop",
    images: { api: "noop/unchanged", "node-agent": "noop/unchanged" },
    actions: [write({ change: { [`repin-streak-api`]: null } })],
  },
  {
    name: "a tick with a new build that finds every target on the pin also removes the repin streak",
    o: both(newApi, (o) => ann(o, "repin-streak-api", "1")),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 1 }, change: { [`repin-streak-api`]: null } }),
      ...REFRESH_API.slice(1),
    ],
  },
  {
    name: "an unresolved image whose targets run the pin removes the repin streak too",
    o: both(
      (o) => {
        o.digests = { ...o.digests, api: { ok: false, failure: "not_found", message: "404" } };
      },
      (o) => ann(o, "repin-streak-api", "1"),
    ),
    outcome: "unresolved",
    actions: [
      write({
        change: { [`repin-streak-api`]: null, [`unresolved-streak-api`]: "1" },
        streaks: ["api"],
      }),
    ],
  },
  {
    name: "reconcile: report leaves a re-rendered tag alone: drifted, exit 0, nothing written",
    o: both(apiRendered, proxyRendered),
    c: (c) => (c.reconcile = "report"),
    outcome: "drifted",
    reason: "tag_rerendered",
    images: { api: "drifted/tag_rerendered", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "adoption: every container names the tag after the first observation; re-pinned once, both workloads",
    o: both(apiRendered, proxyRendered),
    outcome: "refreshed",
    actions: [
      write({ attempts: { api: 1 }, repins: ["api"], change: { [`repin-streak-api`]: "1" } }),
      roll("api", [["api", REPIN_API]], ["api"]),
      roll("api-proxy", [["proxy", REPIN_API]], ["api"]),
      { type: "reset", counts: { api: 1 } },
      { type: "pin-restored", images: ["api"] },
    ],
  },
  {
    name: "a re-render of a locked-out image is held by the lockout like any refresh",
    o: both(apiRendered, (o) => ann(o, "refresh-attempt-api", "3")),
    outcome: "locked_out",
    reason: "flap_lockout",
    actions: [
      write({ change: { [`refresh-flap-detected-api`]: "3" }, flaps: ["api"] }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshLockedOut",
        note: expect.any(String) as never,
        image: "api",
      },
    ],
  },
  {
    name: "a new build with the tag re-rendered is an ordinary refresh of every target (no repin streak)",
    o: both(newApi, apiRendered),
    outcome: "refreshed",
    reason: "digest_changed",
    actions: REFRESH_API,
  },
  // A human's pin.
  {
    name: "kubectl set image to another digest: paused, exit 0, one marker write and one Warning Event",
    o: live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human),
    outcome: "paused",
    reason: "pinned_by_human",
    images: { api: "paused/pinned_by_human", "node-agent": "noop/unchanged" },
    actions: [
      write({ change: { [`paused-api`]: `docker.io/myorg/api@${D("9")}` } }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshPaused",
        note: expect.any(String) as never,
        image: "api",
      },
    ],
  },
  {
    name: "kubectl rollout undo of a target brings back an older pin: paused, never rolled forward (the store keeps R)",
    o: rolledBack,
    outcome: "paused",
    reason: "pinned_by_human",
    images: { api: "paused/pinned_by_human", "node-agent": "noop/unchanged" },
    actions: [
      write({ change: { [`paused-api`]: API_OLD } }),
      {
        type: "event",
        eventType: "Warning",
        reason: "RefreshPaused",
        note: expect.stringContaining(`was set to ${API_OLD} by kubectl`) as never,
        image: "api",
      },
    ],
  },
  {
    name: "the upgrade from the shell job: a pin by kubectl-set to the recorded digest is the record, so the new build rolls",
    o: both(newApi, live("Deployment/apps/api-proxy", "proxy", `index.docker.io/myorg/api@${D("a")}`, human)),
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a pause already announced writes nothing and posts nothing",
    o: both(live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human), (o) =>
      ann(o, "paused-api", `docker.io/myorg/api@${D("9")}`),
    ),
    outcome: "paused",
    actions: [],
  },
  {
    name: "a refresh due while one target is paused: the whole image holds, the other image goes on",
    o: both(
      newApi,
      newAgent,
      live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human),
      (o) => ann(o, "paused-api", `docker.io/myorg/api@${D("9")}`),
    ),
    outcome: "paused",
    images: { api: "paused/pinned_by_human", "node-agent": "refreshed/digest_changed" },
    actions: REFRESH_AGENT,
  },
  {
    name: "another tag of the repository set by someone else is a pause too",
    o: both(live("Deployment/apps/api", "api", "docker.io/myorg/api:1.4.2", human), (o) =>
      ann(o, "paused-api", "docker.io/myorg/api:1.4.2"),
    ),
    outcome: "paused",
    actions: [],
  },
  {
    name: "no managedFields on record counts as someone else: a pin to an unknown digest pauses",
    o: both(live("Deployment/apps/api", "api", `docker.io/myorg/api@${D("9")}`), (o) =>
      ann(o, "paused-api", `docker.io/myorg/api@${D("9")}`),
    ),
    outcome: "paused",
    actions: [],
  },
  {
    name: "image-refresh's own earlier pin (a failed attempt kept) is never a pause: the new build rolls",
    o: both(
      newApi,
      live("Deployment/apps/api", "api", `docker.io/myorg/api@${D("9")}`, {
        manager: "image-refresh",
        operation: "Update",
      }),
    ),
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a pin to the registry's new digest is not a pause, whoever wrote it",
    o: both(newApi, live("Deployment/apps/api", "api", API_C, human)),
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a pause that ended removes its marker; in sync again is noop",
    o: (o) => ann(o, "paused-api", `docker.io/myorg/api@${D("9")}`),
    outcome: "noop",
    actions: [write({ change: { [`paused-api`]: null } })],
  },
  // The wrong container.
  {
    name: "a container that runs another repository is never patched: held, target_mismatch, whatever the registry says",
    o: both(newApi, live("Deployment/apps/api-proxy", "proxy", "envoy:1", argo)),
    outcome: "held",
    reason: "target_mismatch",
    images: { api: "held/target_mismatch", "node-agent": "noop/unchanged" },
    actions: [],
  },
  {
    name: "a mismatch holds its image even while the registry says nothing new",
    o: live("DaemonSet/agents/node-agent", "agent", "ghcr.io/other/agent:1"),
    outcome: "held",
    images: { api: "noop/unchanged", "node-agent": "held/target_mismatch" },
    actions: [],
  },
  {
    name: "Docker Hub's names are one registry: index.docker.io and library-less forms are the configured repository",
    o: both(
      newApi,
      live("Deployment/apps/api", "api", `index.docker.io/myorg/api@${D("a")}`, helm),
      live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api:stable@${D("a")}`, helm),
    ),
    outcome: "refreshed",
    actions: REFRESH_API,
  },
  {
    name: "a target that cannot be read holds its image even with nothing due",
    o: (o) => {
      (o.workloads as NonNullable<Observed["workloads"]>)["DaemonSet/agents/node-agent"] = {
        found: false,
        message: "Forbidden (403)",
      };
    },
    outcome: "held",
    reason: "target_unavailable",
    images: { api: "noop/unchanged", "node-agent": "held/target_unavailable" },
    actions: [],
  },
];

describe("plan: the live spec", () => {
  runCases(cases);

  test("a contest names the manager that keeps undoing the pin and how to make it stop", () => {
    const tools: Array<[FieldOwner, RegExp]> = [
      [helm, /helm at .*digest in the chart's values/],
      [argo, /argocd-controller.*ignoreDifferences.*RespectIgnoreDifferences=true/],
      [{ manager: "kustomize-controller", operation: "Apply" }, /kustomize-controller.*spec\.ignore/],
    ];
    for (const [owner, want] of tools) {
      const o = observed(
        both(live("Deployment/apps/api", "api", "myorg/api:stable", owner), (x) =>
          ann(x, "repin-streak-api", "1"),
        ),
      );
      const v = plan(o, config()).images[0];
      expect(v?.message).toMatch(want);
      expect(v?.message).toContain("image-refresh rearm api");
    }
  });

  test("a pause names who pinned it, when, and the command that hands it back", () => {
    const o = observed(live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human));
    const v = plan(o, config()).images[0];
    expect(v?.message).toContain("kubectl-set at 2026-12-01T12:00:00Z");
    expect(v?.resume).toBe(
      "`kubectl -n apps set image deployment/api-proxy proxy=docker.io/myorg/api:stable` (the next tick re-pins it)",
    );
    expect(v?.paused).toBe(true);
  });

  test("a pause names every workload a human pinned, in one tick, and hands each back", () => {
    const pins = both(
      live("Deployment/apps/api", "api", `docker.io/myorg/api@${D("8")}`, human),
      live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human),
    );
    const d = plan(observed(pins), config());
    const v = d.images[0];
    expect(v?.outcome).toBe("paused");
    expect(v?.message).toContain(
      `Deployment apps/api container api was set to docker.io/myorg/api@${D("8")}`,
    );
    expect(v?.message).toContain(
      `Deployment apps/api-proxy container proxy was set to docker.io/myorg/api@${D("9")}`,
    );
    expect(v?.resume).toContain("deployment/api api=");
    expect(v?.resume).toContain("deployment/api-proxy proxy=");
    // One Event for the pause with both pins; the marker holds both, so the next tick is quiet.
    expect(d.actions.filter((a) => a.type === "event")).toHaveLength(1);
    const marker = `docker.io/myorg/api@${D("8")} docker.io/myorg/api@${D("9")}`;
    expect(d.actions[0]).toMatchObject({ type: "write-state", change: { "paused-api": marker } });
    const next = plan(observed(both(pins, (x) => ann(x, "paused-api", marker))), config());
    expect(next.actions).toEqual([]);
  });

  test("adoption: a first observation on the floating tag leaves a marker; the re-pin after it is an adoption", () => {
    const first = plan(
      observed(both(apiRendered, (o) => ann(o, "last-refreshed-api-digest", undefined))),
      config(),
    );
    expect(first.images[0]?.outcome).toBe("recorded");
    const record = first.actions.find((a) => a.type === "record-digests");
    expect(record).toMatchObject({ digests: { api: D("a") }, also: { "adopt-api": "1" } });
    const next = plan(observed(both(apiRendered, (o) => ann(o, "adopt-api", "1"))), config());
    expect(next.images[0]).toMatchObject({ outcome: "refreshed", reason: "pin_restored", adopted: true });
    expect(next.images[0]?.message).toContain("adopting api");
    // A re-render over a pin this install held is no adoption: a Warning names who replaced it.
    const rerender = plan(observed(apiRendered), config()).images[0];
    expect(rerender?.adopted).toBeUndefined();
    expect(rerender?.restoredFrom).toEqual(["helm"]);
    // Once every pin is in place the marker goes.
    const inPlace = plan(
      observed((o) => ann(o, "adopt-api", "1")),
      config(),
    );
    expect(inPlace.actions).toEqual([write({ change: { "adopt-api": null } })]);
  });

  test("paused and locked out at once: paused (exit 0), and the message says the lockout waits behind the pause", () => {
    const o = observed(
      both(
        live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human),
        (x) => ann(x, "refresh-attempt-api", "3"),
        (x) => ann(x, "refresh-flap-detected-api", "3"),
      ),
    );
    const v = plan(o, config()).images[0];
    expect(v?.outcome).toBe("paused");
    expect(v?.message).toContain("the lockout (3 failed rollouts) waits behind the pause");
    const plain = plan(
      observed(live("Deployment/apps/api-proxy", "proxy", `docker.io/myorg/api@${D("9")}`, human)),
      config(),
    );
    expect(plain.images[0]?.message).not.toContain("lockout");
  });

  test("a re-pin remembers the managers that had removed the pin, for its Event", () => {
    const v = plan(observed(both(apiRendered, proxyRendered)), config()).images[0];
    expect(v?.restoredFrom).toEqual(["helm"]);
    expect(API_A).toContain(D("a"));
  });
});
