// The invariants checked after every tick of tick.property.test.ts, numbered as in issue 6 and
// carried per image (issue 11). Each reads only the API and registry request logs of this tick,
// the state object before and after, the tick's last log line and the simulators' truth
// (current digests, live images, controller modes), never the tick's own account of itself.
// Counters are read with oracle.ts, not lib/annotations.ts.
// biome-ignore-all lint/suspicious/noExplicitAny: request bodies and API objects are free-form JSON
import type { RequestLogEntry } from "../../sim/apiserver/index.ts";
import { DOCUMENTED_SEVERITY, SPEC_EXIT_ONE } from "../support/spec-outcomes.ts";
import {
  IMAGE_KEYS,
  type InProcessWorld,
  MAX_ATTEMPTS,
  MAX_UNRESOLVED,
  PREFIX,
  STATE_PATH,
  TARGETS,
} from "./inprocess.ts";
import { attemptOf, type Count, countOf, flapOf, LEGACY, legacyNames, numberOf } from "./oracle.ts";

export interface Before {
  annotations: Record<string, string>;
  current: Record<string, string>;
  /** The state object read as settled by kubectl's rules, and its controller healthy. */
  stateSettled: boolean;
  /** Controller mode of each workload this tick, by name. */
  modes: Record<string, string>;
  /** Each workload's containers (in spec order) and the image each named before the tick. */
  live: Record<string, Array<{ name: string; image: string }>>;
}
/**
 * What outlives one tick: whether the legacy keys were migrated (they never come back), and per
 * image whether a re-pin may come (none yet, or a tick found every target pinned since the last).
 */
export interface Story {
  migrated: boolean;
  repinArmed: Record<string, boolean>;
  /** The target a GitOps-like tool renders the floating tag over before every tick, if any. */
  gitops?: unknown;
}
export const newStory = (): Story => ({
  migrated: false,
  repinArmed: Object.fromEntries(IMAGE_KEYS.map((key) => [key, true])),
});
interface Tick {
  result: { outcome: string; reason: string; message: string };
  ms: number;
  budgetMs: number;
}
export interface Faults {
  api: boolean;
  registry: boolean;
  /** One repository answers 404 all tick: not a fault of the tick, but not an unchanged world. */
  unresolved: boolean;
}

/** SPEC "Outcomes", in its order of severity, with the exit codes of its table (tests/support/spec-outcomes.ts). */
const ORDER: readonly string[] = DOCUMENTED_SEVERITY;
const EXIT_ONE = SPEC_EXIT_ONE;
const rank = (o: string) => ORDER.indexOf(o);

const k = (name: string) => `${PREFIX}/${name}`;
const ok = (e: RequestLogEntry) => e.status >= 200 && e.status < 300;
const body = (e: RequestLogEntry): any => JSON.parse(e.body ?? "null");
const isJsonPatch = (e: RequestLogEntry) => e.contentType?.startsWith("application/json-patch+json") ?? false;
const imageOps = (e: RequestLogEntry): any[] =>
  e.method === "PATCH" && isJsonPatch(e)
    ? body(e).filter((op: any) => String(op.path).endsWith("/image"))
    : [];
/** The image keys a workload patch carries, from the repositories it pins. */
const carried = (e: RequestLogEntry) =>
  imageOps(e).map((op: any) => /\/myorg\/([^@/]+)@sha256:/.exec(String(op.value))?.[1] ?? "?");
const workloadName = (e: RequestLogEntry) => e.path.split("/").at(-1) as string;
/**
 * The image patches that put a workload back (onFailure: revert): a workload patched a second
 * time in one tick, after its forward patch went through.
 */
function reverts(log: readonly RequestLogEntry[]): Set<RequestLogEntry> {
  const patched = new Set<string>();
  const out = new Set<RequestLogEntry>();
  for (const e of log) {
    if (imageOps(e).length === 0) continue;
    if (patched.has(e.path)) out.add(e);
    else if (ok(e)) patched.add(e.path);
  }
  return out;
}
/** The annotations a merge patch of the state object sets (null: removes). */
const merged = (e: RequestLogEntry): Record<string, string | null> | undefined =>
  e.method === "PATCH" && e.path === STATE_PATH && !isJsonPatch(e)
    ? body(e)?.metadata?.annotations
    : undefined;
/** The images whose attempt counter a JSON patch of the state object removes: the reset. */
const resetKeys = (e: RequestLogEntry): string[] =>
  e.method === "PATCH" && e.path === STATE_PATH && isJsonPatch(e)
    ? body(e)
        .filter((op: any) => op.op === "remove")
        .map((op: any) => /~1refresh-attempt-([^/~]+)$/.exec(String(op.path))?.[1])
        .filter((x: string | undefined) => x !== undefined && IMAGE_KEYS.includes(x))
    : [];
const same = (a: Count, b: Count) =>
  a.kind === b.kind && (a.kind === "untrusted" || numberOf(a) === numberOf(b));
const isLegacy = (name: string) =>
  name.includes("/") && (LEGACY as readonly string[]).includes(name.slice(name.lastIndexOf("/") + 1));

interface Ctx {
  w: InProcessWorld;
  before: Before;
  result: Tick["result"];
  log: RequestLogEntry[];
  was: Record<string, string>;
  after: Record<string, string>;
  must(cond: boolean, rule: string): void;
}

export function checkTick(
  w: InProcessWorld,
  t: { before: Before; tick: Tick; story: Story; faults: Faults },
): void {
  const { before, story } = t;
  const { result } = t.tick;
  const log = [...w.api.log];
  const after = w.annotations();
  const was = before.annotations;
  const trail = log
    .map((e) => `  ${e.method} ${e.path} ${e.status} ${e.body ?? ""}`.slice(0, 300))
    .join("\n");
  const must = (cond: boolean, rule: string) => {
    if (!cond)
      throw new Error(
        `${rule}\noutcome ${result.outcome} (${result.reason}): ${result.message}\nbefore ${JSON.stringify(was)}\nafter ${JSON.stringify(after)}\nrequests:\n${trail}\nlog:\n${w.lines.join("")}`,
      );
  };
  const c: Ctx = { w, before, result, log, was, after, must };
  const faulted = t.faults.api || t.faults.registry;
  const verdicts = lastLine(c);

  // (8) outcomes come from the closed set and map to exit codes; no tick outlives its deadline;
  // the outcome is the most severe image verdict (a whole-tick error may be worse).
  must(ORDER.includes(result.outcome), "(8) outcome outside the closed set");
  must(t.tick.ms <= t.tick.budgetMs + 1000, `(8) tick took ${t.tick.ms} ms, budget ${t.tick.budgetMs} ms`);
  if (verdicts) {
    for (const v of Object.values(verdicts))
      must(rank(v) >= rank(result.outcome), `(8) a verdict ${v} is worse than the outcome`);
    if (result.outcome !== "error")
      must(
        Object.values(verdicts).some((v) => v === result.outcome),
        "(8) the outcome is not the most severe verdict",
      );
  } else if (before.stateSettled && !faulted) must(false, "(8) the last line does not list every image");

  checkRollouts(c, verdicts);
  checkCounts(c);
  checkRecords(c);
  checkLockout(c, faulted);
  checkSkipStreak(c, faulted);
  if (before.stateSettled) checkUnresolved(c, t.faults.api);
  if (!faulted && before.stateSettled) checkIsolation(c);
  checkLegacy(c, story);
  checkLiveSpec(c, story, faulted);

  // (7) a healthy, unchanged installation writes nothing.
  const unchanged = IMAGE_KEYS.every(
    (key) =>
      was[k(`last-refreshed-${key}-digest`)] === before.current[key] && !was[k(`unresolved-streak-${key}`)],
  );
  const quiet =
    was[k("refresh-skip-streak")] === undefined &&
    was[k("registry-retry-after")] === undefined &&
    IMAGE_KEYS.every((key) => onPin(c, key, before.current[key] as string));
  if (!faulted && !t.faults.unresolved && before.stateSettled && unchanged && quiet) {
    must(result.outcome === "noop", "(7) a healthy unchanged tick did something");
    must(
      log.every((e) => e.method === "GET"),
      "(7) a healthy unchanged tick wrote",
    );
  }
}

/** Each image's verdict from the tick's last log line (`<outcome>: api: refreshed; ...`). */
function lastLine(c: Ctx): Record<string, string> | undefined {
  // Lines at WARNING and ERROR carry the level after the prefix: `[image-refresh] ERROR: failed: …`.
  const line = c.w.lines
    .map((l) => l.replace(/^\[image-refresh\] (ERROR|WARNING): /, "[image-refresh] "))
    .filter((l) => l.startsWith(`[image-refresh] ${c.result.outcome}: `))
    .at(-1);
  if (!line) return undefined;
  const out: Record<string, string> = {};
  for (const key of IMAGE_KEYS) {
    const m = [...line.matchAll(new RegExp(`(?:: |; )${key}: ([a-z_]+)`, "g"))].at(-1);
    if (!m?.[1]) return undefined;
    out[key] = m[1];
  }
  return out;
}

/** (1) no image is patched unless its own count+1 was persisted first, in this tick. */
function checkRollouts(c: Ctx, verdicts: Record<string, string> | undefined): void {
  const { log, was, must } = c;
  const back = reverts(log);
  log.forEach((e, i) => {
    if (back.has(e)) {
      checkRevert(c, e);
      return;
    }
    for (const key of carried(e)) {
      must(IMAGE_KEYS.includes(key), `(1) a patch pins an unknown repository: ${e.body}`);
      const n = attemptOf(was, PREFIX, key);
      const want = String(numberOf(n) + 1);
      const persisted = log
        .slice(0, i)
        .some((x) => ok(x) && merged(x)?.[k(`refresh-attempt-${key}`)] === want);
      must(persisted, `(1) ${key} was patched before its attempt ${want} was persisted`);
      must(numberOf(n) < MAX_ATTEMPTS, `(1) ${key} was patched at count ${numberOf(n)}`);
      if (verdicts && ok(e))
        must(
          ["refreshed", "failed"].includes(verdicts[key] ?? ""),
          `(8) ${key} patched but ${verdicts[key]}`,
        );
    }
  });
  if (!verdicts) return;
  for (const key of IMAGE_KEYS) {
    const tried = log.some((e) => carried(e).includes(key));
    if (verdicts[key] === "refreshed")
      must(
        log.some((e) => ok(e) && carried(e).includes(key)),
        `(8) ${key} refreshed without a patch`,
      );
    if (verdicts[key] === "failed") must(tried, `(8) ${key} failed without a patch`);
    // (9) a rollout failure of an image whose workload was patched this tick is reverted
    // (onFailure: revert is the default): its reason says whether the revert settled, never the
    // plain rollout_failed of onFailure: keep.
    const patchedOk = log.some((e) => ok(e) && !back.has(e) && carried(e).includes(key));
    const unreverted = c.w.lines.some((l) =>
      l.includes(`image=${key} outcome=failed reason=rollout_failed `),
    );
    must(
      !(patchedOk && unreverted),
      `(9) ${key}'s rollout failed after a patch went through, and was not reverted`,
    );
  }
}

/**
 * (9) onFailure: revert — a revert patch names exactly the images the workload had before the
 * tick, and a workload put back runs them when the tick ends (SPEC step 7).
 */
function checkRevert(c: Ctx, e: RequestLogEntry): void {
  const name = workloadName(e);
  const had = c.before.live[name] ?? [];
  for (const op of imageOps(e)) {
    const index = Number(/\/containers\/(\d+)\/image$/.exec(String(op.path))?.[1]);
    c.must(
      had[index]?.image === op.value,
      `(9) the revert of ${name} sets ${op.value}, it had ${had[index]?.image}`,
    );
  }
  if (!ok(e)) return;
  // /apis/apps/v1/namespaces/<ns>/<plural>/<name>
  const [ns, plural] = e.path.split("/").slice(5, 7);
  const kind = { deployments: "Deployment", daemonsets: "DaemonSet", statefulsets: "StatefulSet" }[
    plural ?? ""
  ];
  const spec = c.w.api.getObject(kind as "Deployment", ns as string, name)?.spec.template.spec;
  const now = (spec?.containers ?? []).map((x: any) => x.image);
  c.must(
    now.join() === had.map((h) => h.image).join(),
    `(9) ${name} was reverted but runs ${now.join()}, it had ${had.map((h) => h.image).join()}`,
  );
}

/** (2) each count moves by this tick's own writes only: +1 when persisted, 0 after its reset. */
function checkCounts(c: Ctx): void {
  const { log, was, after, must } = c;
  const reset = new Set(log.filter(ok).flatMap(resetKeys));
  for (const key of IMAGE_KEYS) {
    const start = attemptOf(was, PREFIX, key);
    const end = attemptOf(after, PREFIX, key);
    const want = String(numberOf(start) + 1);
    const persisted = log.some((e) => ok(e) && merged(e)?.[k(`refresh-attempt-${key}`)] === want);
    if (reset.has(key)) must(end.kind === "absent", `(2) ${key}'s count survived its reset`);
    else if (persisted) must(numberOf(end) === numberOf(start) + 1, `(2) ${key}'s count is not ${want}`);
    else must(same(start, end), `(2) ${key}'s count changed without its write`);
    if (persisted) must(numberOf(start) + 1 <= MAX_ATTEMPTS, `(2) ${key} counted past the maximum`);
  }
}

/** (3) a digest is recorded on first observation, or after every target settled and the reset. (4) */
function checkRecords(c: Ctx): void {
  const { w, log, was, after, before, must } = c;
  for (const e of log.filter((x) => ok(x) && merged(x))) {
    for (const [name, digest] of Object.entries(merged(e) ?? {})) {
      const m = /^image-refresh\.io\/last-refreshed-(.+)-digest$/.exec(name);
      if (!m?.[1]) continue;
      const key = m[1];
      must(digest === before.current[key], `(3) recorded ${digest} for ${key}, not what the registry serves`);
      if (was[name] === undefined) continue;
      const reset = log.findIndex((x) => ok(x) && resetKeys(x).includes(key));
      must(reset >= 0 && reset < log.indexOf(e), `(3) ${key} recorded without its reset`);
      for (const { w: x, container } of TARGETS[key] ?? []) {
        const spec = w.api.getObject(x.kind, x.namespace, x.name).spec.template.spec;
        const image = spec.containers.find((ct: any) => ct.name === container)?.image;
        must(image === `${w.registry.host}/myorg/${key}@${digest}`, `(3) ${x.name} not on ${digest}`);
      }
    }
  }
  for (const e of log.filter((x) => resetKeys(x).length > 0)) {
    must(!JSON.stringify(body(e)).includes("last-refreshed"), "(4) the reset carries a digest write");
    if (!ok(e)) continue;
    for (const key of resetKeys(e))
      for (const name of [
        `refresh-attempt-${key}`,
        `refresh-flap-detected-${key}`,
        `refresh-attempt-traceparent-${key}`,
      ])
        must(after[k(name)] === undefined, `(4) ${name} still set after a successful reset`);
  }
}

/** (5) a lockout or an untrusted count holds the image's workloads; the marker is written once. */
function checkLockout(c: Ctx, faulted: boolean): void {
  const { log, was, after, before, must } = c;
  const writes = log.filter(ok).flatMap((e) => Object.entries(merged(e) ?? {}));
  const reset = new Set(log.filter(ok).flatMap(resetKeys));
  for (const key of IMAGE_KEYS) {
    const n = attemptOf(was, PREFIX, key);
    const locked = n.kind === "trusted" && n.value >= MAX_ATTEMPTS;
    const flap = flapOf(was, PREFIX, key);
    if (locked || n.kind === "untrusted") {
      // every workload this image is in: a lockout exists to stop churning it, for any image
      const names = new Set<string>((TARGETS[key] ?? []).map((t) => t.w.name));
      const touched = log.filter((e) => imageOps(e).length > 0 && names.has(workloadName(e)));
      must(touched.length === 0, `(5) a workload of ${key} was patched at count ${JSON.stringify(n)}`);
    }
    // only a reset (every target settled) or a re-arm removes it
    if (flap !== undefined && !reset.has(key))
      must(flapOf(after, PREFIX, key) !== undefined, `(5) ${key}'s flap marker vanished without a re-arm`);
    const legacyFlap = legacyNames(was, PREFIX)["refresh-flap-detected"];
    for (const [name, v] of writes) {
      if (name !== k(`refresh-flap-detected-${key}`) || v === null) continue;
      const migration = legacyFlap !== undefined && was[name] === undefined && v === was[legacyFlap];
      const marker = flap === undefined && locked && v === String(numberOf(n));
      must(migration || marker, `(5) ${key}'s flap marker written as ${v} while ${flap ?? "absent"}`);
    }
    const changed = was[k(`last-refreshed-${key}-digest`)] !== before.current[key];
    const recorded = was[k(`last-refreshed-${key}-digest`)] !== undefined;
    if (locked && changed && recorded && !faulted && before.stateSettled)
      must(flapOf(after, PREFIX, key) !== undefined, `(5) ${key} locked out without its flap marker`);
  }
}

/** (6) every unsettled tick counts; a settled tick clears the streak; a failed clear goes on. */
function checkSkipStreak(c: Ctx, faulted: boolean): void {
  const { log, was, after, result, must } = c;
  const streak = numberOf(countOf(was[k("refresh-skip-streak")]));
  if (["not_settled", "skip_ceiling"].includes(result.reason))
    must(
      numberOf(countOf(after[k("refresh-skip-streak")])) === streak + 1,
      "(6) an unsettled tick was not counted",
    );
  if (result.reason === "streak_not_counted") must(faulted, "(6) a streak went uncounted without a fault");
  const clear = log.findIndex((e) => merged(e)?.[k("refresh-skip-streak")] === null);
  if (clear < 0) return;
  const e = log[clear] as RequestLogEntry;
  if (ok(e)) must(after[k("refresh-skip-streak")] === undefined, "(6) a cleared streak came back");
  else
    must(
      // It went on: later writes, or a verdict reached on its own grounds (not an error).
      log.slice(clear + 1).some((x) => x.method !== "GET") || result.outcome !== "error",
      "(6) a failed streak clear stopped the tick",
    );
}

/**
 * Unresolved images (no 200 for their manifest HEAD this tick): streak + 1, never noop, stale
 * exactly at the ceiling with one ImageStale Event; a resolved image's streak is removed.
 */
function checkUnresolved(c: Ctx, apiFaulted: boolean): void {
  const { w, log, was, after, result, must } = c;
  if (!(log[0] && ok(log[0]))) return;
  const resolved = (key: string) =>
    w.registry.log.some(
      (e) => e.method === "HEAD" && e.path === `/v2/myorg/${key}/manifests/stable` && e.status === 200,
    );
  const stale = log.filter(
    (e) => e.method === "POST" && e.path.endsWith("/events") && body(e)?.reason === "ImageStale",
  );
  const limited = w.registry.log.some((e) => e.status === 429);
  let reached = 0;
  let maybe = 0;
  for (const key of IMAGE_KEYS) {
    const name = k(`unresolved-streak-${key}`);
    const n = countOf(was[name]);
    // a target of another repository holds the image first (SPEC step 6): no streak either way
    if (targetsOf(c, key).some((t) => !sameRepo(c, key, t.image))) continue;
    if (resolved(key)) {
      // a 429 aborts the HEADs still in flight (SPEC step 5): one the registry answered 200 to
      // may never have reached the tick, so it may have gone either way
      if (limited) {
        if (numberOf(n) + 1 === MAX_UNRESOLVED) maybe += 1;
      } else if (!apiFaulted) must(after[name] === undefined, `(10) ${key} resolved, its streak stayed`);
      continue;
    }
    must(result.outcome !== "noop", `(10) ${key} unresolved, yet the tick is noop`);
    if (n.kind === "untrusted") continue;
    const next = numberOf(n) + 1;
    if (next === MAX_UNRESOLVED) reached += 1;
    if (next >= MAX_UNRESOLVED) must(EXIT_ONE.has(result.outcome), `(10) ${key} stale, yet exit 0`);
    if (apiFaulted) continue;
    must(after[name] === String(next), `(10) ${key}'s unresolved streak is not ${next}`);
  }
  if (!apiFaulted)
    must(
      stale.length >= reached && stale.length <= reached + maybe,
      `(10) ${stale.length} ImageStale Events, ${reached} reached (${maybe} more may have)`,
    );
}

/**
 * (9) isolation: with no fault, an image whose group's workloads all settle is reset and recorded
 * in the same tick, whatever happens to the images it shares nothing with; one whose group has a
 * workload that never settles keeps its count. Images sharing a workload are reset together.
 */
function checkIsolation(c: Ctx): void {
  const { log, after, before, must } = c;
  const rolled = new Set(log.filter(ok).flatMap(carried));
  const workloadsOf = (key: string) => new Set<string>((TARGETS[key] ?? []).map((t) => t.w.name));
  for (const key of rolled) {
    const group = [...rolled].filter((o) => [...workloadsOf(o)].some((x) => workloadsOf(key).has(x)));
    const names = new Set(group.flatMap((g) => [...workloadsOf(g)]));
    const healthy = [...names].every((n) => before.modes[n] === "healthy");
    const done = attemptOf(after, PREFIX, key).kind === "absent";
    if (healthy) {
      must(done, `(9) ${key}'s workloads all settled, yet it was not reset`);
      must(
        after[k(`last-refreshed-${key}-digest`)] === before.current[key],
        `(9) ${key}'s workloads all settled, yet it was not recorded`,
      );
    } else must(!done, `(9) ${key}'s group has a workload that never settled, yet it was reset`);
    for (const other of group)
      must(
        (attemptOf(after, PREFIX, other).kind === "absent") === done,
        `(9) ${key} and ${other} share a workload but were not reset together`,
      );
  }
}

/** Legacy keys migrate in the first counter write and never come back. */
function checkLegacy(c: Ctx, story: Story): void {
  const { log, after, must } = c;
  for (const e of log.filter((x) => merged(x)))
    for (const [name, v] of Object.entries(merged(e) ?? {}))
      must(!isLegacy(name) || v === null, `(11) ${name} written as ${v}`);
  const counterWrite = log.some(
    (e) =>
      ok(e) &&
      Object.entries(merged(e) ?? {}).some(
        ([name, v]) => v !== null && /\/refresh-(attempt|flap-detected)-[^/]+$/.test(name),
      ),
  );
  if (counterWrite) story.migrated = true;
  if (story.migrated)
    must(
      Object.keys(after).every((name) => !isLegacy(name)),
      "(11) a legacy key is on the state object after the first counter write",
    );
}

// --- the live spec (SPEC step 6) -----------------------------------------------------------------

/** Whether an image reference names the configured repository, in the forms this story writes. */
function sameRepo(c: Ctx, key: string, image: string): boolean {
  const repo = `${c.w.registry.host}/myorg/${key}`;
  return image === repo || image.startsWith(`${repo}@`) || image.startsWith(`${repo}:`);
}
/** The images the image's target containers named before the tick. */
const targetsOf = (c: Ctx, key: string) =>
  (TARGETS[key] ?? []).map((t) => ({
    ...t,
    image: c.before.live[t.w.name]?.find((x) => x.name === t.container)?.image ?? "",
  }));
/** Every target of the image named the pin to this digest before the tick. */
const onPin = (c: Ctx, key: string, digest: string) =>
  targetsOf(c, key).every((t) => t.image === `${c.w.registry.host}/myorg/${key}@${digest}`);
/** A human's pin, as this story writes them: a digest the registry never served, or another tag. */
const humanPin = (c: Ctx, key: string, image: string) =>
  image === `${c.w.registry.host}/myorg/${key}@sha256:${"9".repeat(64)}` ||
  image === `${c.w.registry.host}/myorg/${key}:1.4.2`;

/** The registry answered the image's HEAD with 200 and nothing this tick was rate-limited. */
const resolvedOnly = (c: Ctx, key: string) =>
  c.w.registry.log.some(
    (e) => e.method === "HEAD" && e.path === `/v2/myorg/${key}/manifests/stable` && e.status === 200,
  ) && !c.w.registry.log.some((e) => e.status === 429);

/** The containers a workload patch sets the image of, by name, with the image it sets. */
function patchedContainers(c: Ctx, e: RequestLogEntry): Array<{ name: string; image: string }> {
  const spec = c.before.live[workloadName(e)] ?? [];
  return imageOps(e).map((op: any) => {
    const i = Number(/\/containers\/(\d+)\/image$/.exec(String(op.path))?.[1] ?? -1);
    return { name: spec[i]?.name ?? "?", image: String(op.value) };
  });
}

/**
 * (12) a container that named another repository is never patched; (13) no two re-pins of an
 * image without a tick between that found every target pinned to the recorded digest (a re-pin:
 * a patch of the image to its recorded digest while the registry still serves it); (14) a
 * container a human pinned is never patched, and once the image is resolved (a pause needs L)
 * none of its workloads is.
 */
function checkLiveSpec(c: Ctx, story: Story, faulted: boolean): void {
  const { log, was, before, must } = c;
  const patches = log.filter((e) => imageOps(e).length > 0);
  for (const e of patches)
    for (const p of patchedContainers(c, e)) {
      const key = IMAGE_KEYS.find((x) =>
        TARGETS[x]?.some((t) => t.w.name === workloadName(e) && t.container === p.name),
      );
      const had = before.live[workloadName(e)]?.find((x) => x.name === p.name)?.image ?? "";
      must(
        key !== undefined && sameRepo(c, key, had),
        `(12) ${workloadName(e)}/${p.name} ran ${had}, yet was patched`,
      );
    }
  for (const key of IMAGE_KEYS) {
    const R = was[k(`last-refreshed-${key}-digest`)];
    const repin =
      R !== undefined &&
      R === before.current[key] &&
      patches.some(
        (e) =>
          ok(e) && carried(e).includes(key) && patchedContainers(c, e).some((p) => p.image.endsWith(`@${R}`)),
      );
    if (repin) {
      must(
        story.repinArmed[key] === true,
        `(13) ${key} re-pinned again without a tick that found its pin in place`,
      );
      story.repinArmed[key] = false;
    } else if (
      R !== undefined &&
      R === before.current[key] &&
      onPin(c, key, R) &&
      before.stateSettled &&
      !faulted
    )
      story.repinArmed[key] = true;
    const pinned = targetsOf(c, key).filter((t) => humanPin(c, key, t.image));
    for (const t of pinned)
      must(
        !patches.some(
          (e) => workloadName(e) === t.w.name && patchedContainers(c, e).some((p) => p.name === t.container),
        ),
        `(14) ${t.w.name}/${t.container} was pinned by a human, yet patched`,
      );
    if (pinned.length > 0 && R !== undefined && resolvedOnly(c, key)) {
      const names = new Set<string>((TARGETS[key] ?? []).map((t) => t.w.name));
      must(
        !patches.some((e) => names.has(workloadName(e))),
        `(14) ${key} was pinned by a human, yet its workloads were patched`,
      );
    }
  }
}
