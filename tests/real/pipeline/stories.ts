// The scenarios of the pipeline tier, each one installation among healthy ones, written as what
// happens before which tick (0-based; one tick every compressed 5 minutes). Every story names the
// alert it must raise, on which image, from which moment, and the promise its text makes.

import type { WorkloadKind } from "../../../lib/workload.ts";
import { floatTargets, waitSettled } from "../../support/world.ts";
import { minutes } from "./compress.ts";
import { API_TARGET, storeOf } from "./identity.ts";
import type { Installation } from "./installations.ts";

export interface Expectation {
  alert: string;
  installation: string;
  image?: string;
  /** The mark from which the alert's promise runs, and the mark after which it must be gone. */
  from: string;
  gone: string;
  /** How long after `from` the alert's text promises it (compressed ms); it must not fire earlier. */
  promise: number;
}

export interface Story {
  installation: string;
  before?: (n: number, i: Installation) => void | Promise<void>;
  expect: Expectation[];
}

const AGENT_MANIFESTS = /\/v2\/myorg\/node-agent\/manifests\//;
const storePath = (name: string) => {
  const s = storeOf(name);
  return `/api/v1/namespaces/${s.namespace}/configmaps/${s.name}`;
};
const last = (i: Installation) => i.runs.at(-1);
/** Marks `name` at the end of the tick that just ran (its points are exported by then). */
const markLastTick = (i: Installation, name: string) => {
  i.marks[name] = last(i)?.end ?? Date.now();
};

/** After the hand back: the container names a digest again, which only a re-pin writes. */
function pinnedAgain(
  i: Installation,
  [kind, namespace, name, container]: readonly [WorkloadKind, string, string, string],
): boolean {
  const spec = i.world.api.getObject(kind, namespace, name)?.spec?.template?.spec;
  const image = spec?.containers?.find((c: { name: string }) => c.name === container)?.image;
  return typeof image === "string" && image.includes("@sha256:");
}

export const HEALTHY = ["healthy-a", "healthy-b"];

export const STORIES: Story[] = [
  {
    // A re-render of the tag by a deploy tool: a re-pin, so the dashboard's re-pin panel has data.
    installation: "healthy-b",
    before: async (n, i) => {
      if (n === 4) await floatTargets(i.world, ["api"]);
    },
    expect: [],
  },
  {
    // A bad build of node-agent flaps three times (exit 1), the fourth tick holds it (locked out).
    // Fixed and rearmed before tick 9, which refreshes it.
    // Then a build of api that passes its verification and crashes 1.2 s later (tick 12): the
    // next tick (13) finds it regressed, counts it and reverts; the fix pushed before it rolls out
    // on tick 14. Nothing alerts on one regression; the dashboard's regressions series has data.
    installation: "lockout",
    before: async (n, i) => {
      if (n === 12) {
        const bad = i.world.registry.push("myorg/api", "stable");
        const ref = `${i.world.registry.host}/myorg/api@${bad}`;
        i.world.api.failImages("Deployment", "apps", "api-proxy", [ref], { crashAfterMs: 1200 });
      }
      if (n === 13) i.world.registry.push("myorg/api", "stable");
      if (n === 2) {
        const bad = i.world.registry.push("myorg/node-agent", "stable", { multiArch: true });
        const ref = `${i.world.registry.host}/myorg/node-agent@${bad}`;
        i.world.api.failImages("DaemonSet", "agents", "node-agent", [ref]);
      }
      // The third failure (tick 4) already reports locked_out 1.
      if (n === 5) markLastTick(i, "locked");
      if (n === 9) {
        i.world.api.failImages("DaemonSet", "agents", "node-agent", []);
        await i.command(["rearm"]);
      }
      if (n === 10) markLastTick(i, "rearmed");
    },
    expect: [
      {
        alert: "ImageRefreshLockedOut",
        installation: "lockout",
        image: "node-agent",
        from: "locked",
        gone: "rearmed",
        promise: 0,
      },
    ],
  },
  {
    // node-agent's tag cannot be resolved from tick 1 (404): streak 2 at tick 2, 8 at tick 8.
    installation: "stale",
    before: (n, i) => {
      if (n === 1)
        i.world.registry.faults.add({ path: AGENT_MANIFESTS, fault: { type: "status", code: 404 } });
      if (n === 3) markLastTick(i, "streak 2");
      if (n === 9) markLastTick(i, "streak 8");
      if (n === 11) i.world.registry.faults.clear();
      if (n === 12) markLastTick(i, "resolved");
    },
    expect: [
      {
        alert: "ImageRefreshUnresolvedStreak",
        installation: "stale",
        image: "node-agent",
        from: "streak 2",
        gone: "resolved",
        promise: 0,
      },
      {
        alert: "ImageRefreshImageStale",
        installation: "stale",
        image: "node-agent",
        from: "streak 8",
        gone: "resolved",
        promise: 0,
      },
    ],
  },
  {
    // A target of api stops settling before tick 1: api skips at ticks 1 and 2 and freezes at
    // tick 3 (exit 1); node-agent goes on throughout. It settles again before tick 8, which
    // unfreezes api.
    installation: "frozen",
    before: async (n, i) => {
      const s = API_TARGET;
      if (n === 1) i.world.api.setMode(s.kind, s.namespace, s.name, "unsettled");
      if (n === 4) markLastTick(i, "frozen");
      if (n === 8) {
        i.world.api.setMode(s.kind, s.namespace, s.name, "healthy");
        await waitSettled(i.world, [{ kind: s.kind, ns: s.namespace, name: s.name }], i.name);
      }
      if (n === 9) markLastTick(i, "settled");
    },
    expect: [
      {
        alert: "ImageRefreshFrozen",
        installation: "frozen",
        image: "api",
        from: "frozen",
        gone: "settled",
        promise: 0,
      },
    ],
  },
  {
    // Its CronJob stops after 6 ticks; the test starts it again once NoTicks has fired.
    installation: "stops",
    before: (n, i) => {
      if (n === 6 && !i.marks.stopped) {
        markLastTick(i, "stopped");
        i.active = false;
      }
      if (n === 6 && i.marks.resumed) i.marks["ticks again"] = Date.now();
      if (n === 7) markLastTick(i, "ticked again");
    },
    expect: [
      {
        alert: "ImageRefreshNoTicks",
        installation: "stops",
        from: "stopped",
        gone: "ticked again",
        promise: minutes(30),
      },
    ],
  },
  {
    // A human pins api-proxy to a build of their own before tick 2: api is paused (and not in
    // sync, and no longer verified). The test hands it back with the tag once all three fired.
    // The pause is over with the first tick that sees the tag ("handed back"); the image is in
    // sync and verified again only once a tick re-pins it ("re-pinned"), which waits until the
    // human's own rollout back to the tag has settled (a tick meanwhile skips it, not_settled).
    installation: "paused",
    before: (n, i) => {
      const w = i.world;
      const proxy = ["Deployment", "apps", "api-proxy", "proxy"] as const;
      if (n === 2) {
        markLastTick(i, "last verified");
        const own = w.registry.push("myorg/api", "custom");
        w.api.setImage(...proxy, `${w.registry.host}/myorg/api@${own}`, { manager: "kubectl-set" });
      }
      if (n === 3) markLastTick(i, "paused");
      const handing = i.marks.handing;
      if (i.marks["hand back"] && handing === undefined) {
        w.api.setImage(...proxy, `${w.registry.host}/myorg/api:stable`, { manager: "kubectl-set" });
        i.marks.handing = n;
        return;
      }
      if (handing === undefined || n <= handing) return;
      if (n === handing + 1) markLastTick(i, "handed back");
      if (i.marks["re-pinned"] === undefined && pinnedAgain(i, proxy)) markLastTick(i, "re-pinned");
    },
    expect: [
      {
        alert: "ImageRefreshImagePaused",
        installation: "paused",
        image: "api",
        from: "paused",
        gone: "handed back",
        promise: minutes(60),
      },
      {
        alert: "ImageRefreshNotInSync",
        installation: "paused",
        image: "api",
        from: "paused",
        gone: "re-pinned",
        promise: minutes(120),
      },
      {
        alert: "ImageRefreshNotVerified",
        installation: "paused",
        image: "api",
        from: "last verified",
        gone: "re-pinned",
        promise: minutes(360),
      },
    ],
  },
  {
    // Succeeds, then every tick fails from tick 2 on (the API refuses its store: a Role
    // removed); the test grants it again once NoRecentSuccess has fired, 2 hours after the last
    // success (the other half of the rule: "never" below is the installation that never did).
    installation: "relapse",
    before: (n, i) => {
      if (n === 2) {
        markLastTick(i, "last success");
        i.world.api.faults.add({
          method: "GET",
          path: storePath("relapse"),
          fault: { type: "status", code: 403 },
        });
      }
      if (i.marks.granted && !i.marks.succeeded && last(i)?.code === 0) markLastTick(i, "succeeded");
    },
    expect: [
      {
        alert: "ImageRefreshNoRecentSuccess",
        installation: "relapse",
        from: "last success",
        gone: "succeeded",
        promise: minutes(120),
      },
    ],
  },
  {
    // Every tick fails from the first (the API refuses its store: RBAC not yet granted);
    // the test grants it once NoRecentSuccess has fired.
    installation: "never",
    before: (n, i) => {
      if (n === 0) {
        i.world.api.faults.add({
          method: "GET",
          path: storePath("never"),
          fault: { type: "status", code: 403 },
        });
      }
      if (n === 1) markLastTick(i, "first tick");
      if (i.marks.granted && !i.marks.succeeded && last(i)?.code === 0) markLastTick(i, "succeeded");
    },
    expect: [
      {
        alert: "ImageRefreshNoRecentSuccess",
        installation: "never",
        from: "first tick",
        gone: "succeeded",
        promise: minutes(120),
      },
    ],
  },
];
