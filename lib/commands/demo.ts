// `image-refresh demo`: the real tick, in-process, against the built-in simulated cluster and
// registry. It tells the per-image story a user needs to trust the tool: first observation, a
// refresh, a bad DaemonSet build reverted, then locked out after three attempts while the other image still
// refreshes beside it, a human rejecting the bad build, the next build rolling out, an image
// the registry cannot resolve turning stale (a loud failure) instead of a quiet no-op, and the
// live spec: adoption of containers that name the tag, a Helm re-render re-pinned, a human's pin
// stood back from, and a GitOps controller's endless revert contested instead of looped; and bad
// builds that become Ready first: one that crashes inside its verification window, reverted by the
// tick that rolled it out, and one that crashes after it, reverted by the next tick as a regression.
// The demo is loaded only by `image-refresh demo` (a chunk of its own), so the simulators it
// imports cost a tick nothing.

import { settled, waitFor } from "../../sim/apiserver/driver.ts";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { type SimRegistry, startRegistry } from "../../sim/registry.ts";
import { scenarioConfig, seedScenario } from "../../sim/scenario.ts";
import { generateTls } from "../../sim/tls.ts";
import type { CliArgs } from "../cli.ts";
import type { WorkloadKind } from "../kube/objects.ts";
import { createLogger } from "../log.ts";
import { writeStdout } from "../output.ts";
import { noopTelemetry } from "../telemetry.ts";
import { runTick } from "../tick/index.ts";
import { rearmCommand } from "./rearm.ts";
import { rejectCommand } from "./reject.ts";
import { createRuntime } from "./runtime.ts";

// Short rollout timeouts so that the flapping agent's three attempts take seconds, not minutes.
const DEMO_SETTINGS = {
  maxSkipTicks: 4,
  maxUnresolvedTicks: 2,
  rolloutTimeout: "1500ms",
  requestTimeout: "5s",
};

const out = (line: string) => writeStdout(`${line}\n`);

type Tick = (title: string) => Promise<string>;

const LIVE_IMAGE_OUTCOMES = [
  "refreshed",
  "noop",
  "refreshed",
  "paused",
  "refreshed",
  "noop",
  "refreshed",
  "held",
];

/**
 * The live spec: a deploy tool renders the tag over the pin (re-pinned once), a human
 * rolls a Deployment back by hand (paused until handed back), and a GitOps controller that reverts
 * after every tick (one re-pin, then the pin is contested instead of a restart loop).
 */
async function liveSpec(api: SimApiServer, registry: SimRegistry, tick: Tick): Promise<string[]> {
  const outcomes: string[] = [];
  const tag = `${registry.host}/myorg/api:stable`;
  const as = async (
    kind: WorkloadKind,
    ns: string,
    name: string,
    c: string,
    image: string,
    manager: string,
  ) => {
    api.setImage(kind, ns, name, c, image, { manager });
    // Its rollout runs to the end first, as `helm upgrade --wait` would: the next tick meets it settled.
    await waitFor(api, kind, ns, name, settled, 5000);
  };
  const previous = api.getObject("Deployment", "apps", "api-proxy").spec.template.spec.containers[0].image;
  out("\n── `helm upgrade` renders myorg/api:stable over the pin of Deployment apps/api");
  await as("Deployment", "apps", "api", "api", tag, "helm");
  outcomes.push(await tick("the tag is back where the pin was: re-pin it once, a counted refresh"));
  outcomes.push(await tick("the pin is in place again: the repin streak is removed"));
  registry.push("myorg/api", "stable");
  outcomes.push(await tick("a new api build rolls out as usual"));
  out(
    "\n── a human rolls api-proxy back by hand: `kubectl set image deployment/api-proxy proxy=<the older pin>`",
  );
  await as("Deployment", "apps", "api-proxy", "proxy", previous, "kubectl-set");
  outcomes.push(await tick("a human pinned api-proxy: api is paused, nothing is patched"));
  out("\n── the human hands it back: `kubectl set image deployment/api-proxy proxy=myorg/api:stable`");
  await as("Deployment", "apps", "api-proxy", "proxy", tag, "kubectl-set");
  outcomes.push(await tick("handed back: api-proxy is re-pinned to the recorded build"));
  outcomes.push(await tick("every pin in place"));
  out(
    "\n── a GitOps controller (argocd-controller) re-applies myorg/api:stable to api-proxy after every tick",
  );
  await as("Deployment", "apps", "api-proxy", "proxy", tag, "argocd-controller");
  outcomes.push(await tick("re-pinned once"));
  await as("Deployment", "apps", "api-proxy", "proxy", tag, "argocd-controller");
  outcomes.push(
    await tick("reverted again: the pin is contested; no second re-pin, no restart loop (exit 1)"),
  );
  return outcomes;
}

export async function demoCommand(_args: CliArgs): Promise<number> {
  const tls = generateTls();
  const api = await startApiServer({ tls, stepMs: 20 });
  const registry = await startRegistry({ tls });
  try {
    return await story(api, registry, tls.caPem);
  } finally {
    await Promise.all([api.stop(), registry.stop()]);
  }
}

async function story(api: SimApiServer, registry: SimRegistry, ca: string): Promise<number> {
  seedScenario(api, registry, { pinned: false });
  const files: Record<string, string> = {
    "/demo/config.json": JSON.stringify(scenarioConfig(registry.host, DEMO_SETTINGS)),
    "/demo/kubeconfig": api.kubeconfig(),
  };
  const readFile = (p: string) => {
    const text = files[p];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
    return text;
  };
  const args: CliArgs = {
    command: "tick",
    help: false,
    dryRun: false,
    json: false,
    config: "/demo/config.json",
    kubeconfig: "/demo/kubeconfig",
    images: [],
  };
  const log = createLogger({ format: "text", write: (l) => writeStdout(`    ${l}`) });
  const runtime = () =>
    createRuntime(args, { env: {}, readFile, log, telemetry: noopTelemetry(), registryCa: ca });
  let n = 0;
  const tick = async (title: string) => {
    out(`\n── tick ${++n}: ${title}`);
    const r = await runTick((await runtime()).tickContext(false));
    out(`  outcome: ${r.outcome} (${r.reason}): ${r.message}`);
    // The bookkeeping, as the store (image-refresh's own ConfigMap) holds it after the tick.
    const book: Record<string, string> = api.getConfigMap("image-refresh", "image-refresh-state")?.data ?? {};
    for (const [k, v] of Object.entries(book)) out(`  store ${k}: ${v}`);
    return r.outcome;
  };
  const outcomes: string[] = [];
  outcomes.push(await tick("first run: record the digests, touch nothing"));
  outcomes.push(
    await tick("the containers name the floating tag: re-pin them once to the recorded builds (adoption)"),
  );
  outcomes.push(await tick("nothing changed: no writes at all"));
  registry.push("myorg/api", "stable");
  outcomes.push(await tick("myorg/api:stable was rebuilt: pin both Deployments to the new digest"));
  const bad = registry.push("myorg/node-agent", "stable", { multiArch: true });
  // A bad build: its pods never become available; the old build's still do.
  api.failImages("DaemonSet", "agents", "node-agent", [`${registry.host}/myorg/node-agent@${bad}`]);
  for (let i = 1; i <= 2; i++)
    outcomes.push(
      await tick(
        `myorg/node-agent was rebuilt, but its new pods never become available: reverted to the old build (attempt ${i})`,
      ),
    );
  outcomes.push(
    await tick(
      "the third rollout of that build fails too: reverted, and node-agent is locked out on this tick (exit 1)",
    ),
  );
  registry.push("myorg/api", "stable");
  outcomes.push(
    await tick("node-agent is locked out, and a new api build arrives: api still refreshes beside it"),
  );
  outcomes.push(await tick("still locked out: no rollout, no new write"));
  out("\n── a human looks at the agent's build and runs `image-refresh reject node-agent`: not this build");
  await rejectCommand(await runtime(), false, ["node-agent"]);
  outcomes.push(await tick("the rejected build is never rolled out: node-agent is paused"));
  registry.push("myorg/node-agent", "stable", { multiArch: true });
  outcomes.push(await tick("a fixed node-agent build is pushed: it rolls out"));
  out("\n── the registry stops answering for myorg/api (a deleted repository, a refused pull secret)");
  registry.faults.add({ path: /\/v2\/myorg\/api\/manifests\//, fault: { type: "status", code: 404 } });
  outcomes.push(await tick("api cannot be resolved: unresolved, never a quiet noop"));
  outcomes.push(await tick("still unresolved: the image is stale, the tick fails loudly (exit 1)"));
  registry.faults.clear();
  outcomes.push(await tick("the registry answers again: the streak is removed"));
  outcomes.push(...(await liveSpec(api, registry, tick)));
  outcomes.push(...(await soakChapter({ api, registry, tick, runtime, files })));
  outcomes.push(...(await crashChapter({ api, registry, tick, files })));
  const want = [
    "recorded",
    "refreshed",
    "noop",
    "refreshed",
    "failed",
    "failed",
    "locked_out",
    "locked_out",
    "locked_out",
    "paused",
    "refreshed",
    "unresolved",
    "stale",
    "noop",
    ...LIVE_IMAGE_OUTCOMES,
    ...SOAK_OUTCOMES,
    ...CRASH_OUTCOMES,
  ];
  const ok = want.every((w, i) => outcomes[i] === w);
  out(
    `\n${ok ? "demo finished: every tick did what it should" : `demo went wrong: outcomes ${outcomes.join(", ")}, expected ${want.join(", ")}`}`,
  );
  return ok ? 0 : 1;
}

const SOAK_OUTCOMES = ["refreshed", "pending", "pending", "refreshed", "refreshed"];
// Seconds in the demo; hours in a fleet.
const DEMO_SOAK = 3000;

/**
 * A soak (minimumAge): this cluster joins the slow ring; a new build waits, the tag
 * moves on, the older build still rolls out once it has aged (the ratchet), then the newer one.
 */
async function soakChapter(d: {
  api: SimApiServer;
  registry: SimRegistry;
  tick: Tick;
  runtime: () => ReturnType<typeof createRuntime>;
  files: Record<string, string>;
}): Promise<string[]> {
  const { api, registry, tick } = d;
  const outcomes: string[] = [];
  out("\n── the team makes argocd-controller ignore the image field and runs `image-refresh rearm api`");
  await rearmCommand(await d.runtime(), false, ["api"]);
  outcomes.push(await tick("handed back: api-proxy is re-pinned, and this time it stays"));
  out("\n── this cluster joins the slow ring: `minimumAge: 3s` (hours in a fleet; canary clusters keep 0s)");
  d.files["/demo/config.json"] = JSON.stringify(
    scenarioConfig(registry.host, { ...DEMO_SETTINGS, minimumAge: `${DEMO_SOAK / 1000}s` }),
  );
  const first = registry.push("myorg/api", "stable");
  outcomes.push(await tick("a new api build: stored as a candidate with the API server's clock, pending"));
  await Bun.sleep(1500);
  const second = registry.push("myorg/api", "stable");
  outcomes.push(await tick("the tag moved on before the first build aged: both wait"));
  await untilAged(api, first);
  outcomes.push(await tick("the first build has aged: it rolls out by digest, though the tag moved on"));
  await untilAged(api, second);
  outcomes.push(await tick("the newer build has aged too: it rolls out, no candidate is left"));
  return outcomes;
}

const CRASH_OUTCOMES = ["failed", "refreshed", "failed", "refreshed"];

/**
 * Bad builds that become Ready first, as real bad builds often do: one crashes inside verifyFor
 * (failed by the tick that rolled it out), one after it (a regression, reverted by the next tick,
 * the fix rolling out on the tick after).
 */
async function crashChapter(d: {
  api: SimApiServer;
  registry: SimRegistry;
  tick: Tick;
  files: Record<string, string>;
}): Promise<string[]> {
  const { api, registry, tick } = d;
  const outcomes: string[] = [];
  const pin = (digest: string) => `${registry.host}/myorg/api@${digest}`;
  out(
    "\n── back to `minimumAge: 0s`, and `verifyFor: 1s`: a rollout counts once its new pods stayed Ready that long",
  );
  d.files["/demo/config.json"] = JSON.stringify(
    scenarioConfig(registry.host, { ...DEMO_SETTINGS, verifyFor: "1s" }),
  );
  const early = registry.push("myorg/api", "stable");
  api.failImages("Deployment", "apps", "api-proxy", [pin(early)], { crashAfterMs: 300 });
  outcomes.push(
    await tick(
      "a new api build becomes Ready on api-proxy, then crashes 0.3 s later: failed verification, reverted",
    ),
  );
  const late = registry.push("myorg/api", "stable");
  api.failImages("Deployment", "apps", "api-proxy", [pin(late)], { crashAfterMs: 2500 });
  outcomes.push(await tick("the next build stays Ready through its verification: refreshed and recorded"));
  await waitFor(api, "Deployment", "apps", "api-proxy", (o) => !settled(o), 10_000);
  outcomes.push(
    await tick(
      "its pods crash 2.5 s after Ready: within regressionWindow, a regression: reverted to the build before",
    ),
  );
  registry.push("myorg/api", "stable");
  outcomes.push(await tick("a fixed build is pushed: nothing is frozen in front of it, it rolls out"));
  return outcomes;
}

/** Sleeps until a candidate's first-seen time (the API server's clock) is minimumAge behind. */
async function untilAged(api: SimApiServer, digest: string): Promise<void> {
  const raw: string =
    api.getConfigMap("image-refresh", "image-refresh-state")?.data?.["candidates-api"] ?? "";
  const seen = Date.parse(
    raw
      .split(",")
      .find((e) => e.startsWith(digest))
      ?.split("=")[1] ?? "",
  );
  if (!Number.isFinite(seen)) throw new Error(`${digest} is not a candidate: ${raw}`);
  await Bun.sleep(Math.max(0, seen + DEMO_SOAK + 200 - Date.now()));
}
