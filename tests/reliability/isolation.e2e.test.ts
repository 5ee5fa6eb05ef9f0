// Isolation: images that share no workload are independent. In the default
// world api (Deployments api and api-proxy) and node-agent (DaemonSet node-agent) share none, so a
// fault on one image's registry request, workload patch or rollout must never stop the other's
// refresh, reset or record in the same tick. Each cell: both images have a new build, exactly one
// request (or rollout) of one image misbehaves, and the other image must end fully refreshed.
import { describe, expect, test } from "bun:test";
import type { Fault } from "../../sim/faults.ts";
import {
  AGENT_PATH,
  budgetMs,
  exitCodeFor,
  invariants,
  k,
  limiter,
  makeScene,
  OLD,
  outcomeOf,
  PROXY_PATH,
  TARGETS,
  verdictsOf,
} from "./scene.ts";
import { run } from "./spawn.ts";

type Key = "api" | "node-agent";
const OTHER: Record<Key, Key> = { api: "node-agent", "node-agent": "api" };
const REPO: Record<Key, string> = { api: "myorg/api", "node-agent": "myorg/node-agent" };
/** The workload of each image whose patch or rollout is broken. */
const VICTIM: Record<Key, { kind: "Deployment" | "DaemonSet"; ns: string; name: string; path: string }> = {
  api: { kind: "Deployment", ns: "apps", name: "api-proxy", path: PROXY_PATH },
  "node-agent": { kind: "DaemonSet", ns: "agents", name: "node-agent", path: AGENT_PATH },
};

const REGISTRY_FAULTS: Record<string, Fault> = {
  "500": { type: "status", code: 500 },
  "404 (typo'd repository)": { type: "status", code: 404, reason: "MANIFEST_UNKNOWN" },
  "401 (credential refused)": { type: "status", code: 401, reason: "UNAUTHORIZED" },
  "hang > timeout": { type: "hang" },
  reset: { type: "reset" },
  malformed: { type: "malformed" },
};
// A 429 is left out on purpose: it is the registry's trouble, not the image's (no more requests
// to that registry this tick), so it may rightly leave the other image unresolved too.
const PATCH_FAULTS: Record<string, Fault> = {
  "500": { type: "status", code: 500 },
  "hang > timeout": { type: "hang" },
  reset: { type: "reset" },
  malformed: { type: "malformed" },
};
const ROLLOUT_MODES = ["deadline", "flap"] as const;

interface Cell {
  name: string;
  /** The image whose request or rollout misbehaves. */
  broken: Key;
  /** unresolved: a registry fault; failed: a patch or rollout fault. */
  kind: "unresolved" | "failed";
  arrange(s: Awaited<ReturnType<typeof makeScene>>): void;
  /** The fault must have met a request, or the cell proves nothing. */
  fired(s: Awaited<ReturnType<typeof makeScene>>): boolean;
}

function cells(): Cell[] {
  const out: Cell[] = [];
  for (const broken of ["api", "node-agent"] as const) {
    const manifest = `/v2/${REPO[broken]}/manifests/stable`;
    for (const [fname, fault] of Object.entries(REGISTRY_FAULTS))
      out.push({
        name: `${broken}'s registry HEAD × ${fname}`,
        broken,
        kind: "unresolved",
        arrange: (s) => s.w.registry.faults.add({ method: "HEAD", path: manifest, fault }),
        fired: (s) => s.w.registry.log.some((e) => e.method === "HEAD" && e.path === manifest),
      });
    const v = VICTIM[broken];
    for (const [fname, fault] of Object.entries(PATCH_FAULTS))
      out.push({
        name: `${broken}'s patch of ${v.name} × ${fname}`,
        broken,
        kind: "failed",
        arrange: (s) => s.w.api.faults.add({ method: "PATCH", path: v.path, times: 1, fault }),
        fired: (s) => s.w.api.log.some((e) => e.method === "PATCH" && e.path === v.path),
      });
    for (const mode of ROLLOUT_MODES)
      out.push({
        name: `${broken}'s rollout of ${v.name} × ${mode}`,
        broken,
        kind: "failed",
        arrange: (s) => s.w.api.setMode(v.kind, v.ns, v.name, mode),
        fired: (s) => s.w.api.log.some((e) => e.method === "PATCH" && e.path === v.path && e.status < 300),
      });
  }
  return out;
}

/** What went wrong in one cell, each problem named; empty when isolation held. */
async function runCell(cell: Cell): Promise<{ problems: string[]; stderr: string }> {
  const rolloutMs = 2000;
  const s = await makeScene("changed", (c) => (c.rolloutTimeout = `${rolloutMs}ms`));
  try {
    cell.arrange(s);
    const started = Date.now();
    const r = await run(s.w);
    const problems = invariants(s, r, Date.now() - started, budgetMs(rolloutMs));
    if (!cell.fired(s)) problems.push("the fault never fired");
    const outcome = outcomeOf(r);
    // The broken image's verdict is the more severe of the two either way.
    if (outcome !== cell.kind) problems.push(`outcome ${outcome}, want ${cell.kind}`);
    if (r.code !== exitCodeFor(cell.kind)) problems.push(`exit ${r.code}`);
    const ok = cell.broken;
    const other = OTHER[ok];
    const want = { [ok]: cell.kind, [other]: "refreshed" };
    const got = verdictsOf(r);
    if (got[ok] !== want[ok] || got[other] !== want[other]) problems.push(`verdicts ${JSON.stringify(got)}`);
    problems.push(...refreshedFully(s, other), ...brokenKept(s, ok, cell.kind));
    return { problems, stderr: r.stderr };
  } finally {
    await s.w.stop();
  }
}

/** The disjoint image: every target on its new build, the digest recorded, its counters gone. */
function refreshedFully(s: Awaited<ReturnType<typeof makeScene>>, key: Key): string[] {
  const problems: string[] = [];
  const digest = s.digests[key] as string;
  for (const t of TARGETS[key] ?? []) {
    const image = s.w.image(t.kind, t.ns, t.name, t.container);
    if (image !== `${s.w.registry.host}/${REPO[key]}@${digest}`)
      problems.push(`${key}: ${t.name} runs ${image}`);
  }
  const a = s.w.ours();
  if (a[k(`last-refreshed-${key}-digest`)] !== digest) problems.push(`${key}: not recorded`);
  for (const name of [`refresh-attempt-${key}`, `refresh-flap-detected-${key}`, `unresolved-streak-${key}`])
    if (a[k(name)] !== undefined) problems.push(`${key}: ${name} = ${a[k(name)]} after its refresh`);
  return problems;
}

/** The broken image: its trouble counted where its own rule counts it, its old digest kept. */
function brokenKept(s: Awaited<ReturnType<typeof makeScene>>, key: Key, kind: Cell["kind"]): string[] {
  const problems: string[] = [];
  const a = s.w.ours();
  if (a[k(`last-refreshed-${key}-digest`)] !== OLD) problems.push(`${key}: recorded despite the fault`);
  const [counted, absent] =
    kind === "unresolved"
      ? ["unresolved-streak", "refresh-attempt"]
      : ["refresh-attempt", "unresolved-streak"];
  if (a[k(`${counted}-${key}`)] !== "1")
    problems.push(`${key}: ${counted} = ${a[k(`${counted}-${key}`)]}, want 1`);
  if (a[k(`${absent}-${key}`)] !== undefined)
    problems.push(`${key}: ${absent} = ${a[k(`${absent}-${key}`)]}`);
  return problems;
}

describe("isolation: a fault on one image never stops a disjoint image's refresh and record", () => {
  const slot = limiter(3);
  for (const cell of cells())
    test.concurrent(
      cell.name,
      () =>
        slot(async () => {
          const c = await runCell(cell);
          expect(c.problems, `${cell.name}\n${c.stderr}`).toEqual([]);
        }),
      60_000,
    );
});
