// The invariants checked after every tick of tick.property.test.ts, numbered as in issue 6 and
// carried per image (issue 11). Each reads only the API and registry request logs of this tick,
// the store's data (and the legacy `state` workload's annotations) before and after, the tick's
// last log line and the simulators' truth (current digests, live images, controller modes),
// never the tick's own account of itself. Counters are read with oracle.ts, not lib/state/.
// biome-ignore-all lint/suspicious/noExplicitAny: request bodies and API objects are free-form JSON
import type { RequestLogEntry } from "../../sim/apiserver/index.ts";
import { DOCUMENTED_EXIT_ONE, DOCUMENTED_SEVERITY } from "../support/documented-outcomes.ts";
import {
  IMAGE_KEYS,
  type InProcessWorld,
  MAX_ATTEMPTS,
  MAX_SKIPS,
  MAX_UNRESOLVED,
  PREFIX,
  STATE_PATH,
  STORE_COLLECTION,
  STORE_PATH,
  TARGETS,
} from "./inprocess.ts";
import { attemptOf, type Count, countOf, flapOf, imageKeysOf, LEGACY, numberOf } from "./oracle.ts";

export interface Before {
  /** The store's data. */
  book: Record<string, string>;
  /** The legacy `state` workload's annotations (they count while the store has no entry of an image). */
  annotations: Record<string, string>;
  current: Record<string, string>;
  /** Each workload read as settled by kubectl's rules with its controller healthy, by name. */
  settled: Record<string, boolean>;
  /** Each workload not settled by kubectl's rules with a controller that will not finish it, by name. */
  unsettled: Record<string, boolean>;
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
  /** The legacy annotations a successful removal took off the state workload: each goes once. */
  unlabelled: string[];
  repinArmed: Record<string, boolean>;
  /** The target a GitOps-like tool renders the floating tag over before every tick, if any. */
  gitops?: unknown;
}
export const newStory = (): Story => ({
  migrated: false,
  unlabelled: [],
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

/** The documented outcomes, most severe first, with their exit codes (support/documented-outcomes.ts). */
const ORDER: readonly string[] = DOCUMENTED_SEVERITY;
const EXIT_ONE: ReadonlySet<string> = new Set(DOCUMENTED_EXIT_ONE);
const rank = (o: string) => ORDER.indexOf(o);

/** Store keys carry no prefix. */
const k = (name: string) => name;
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
/** The data keys a store write sets (null: removes): its merge patch, or the create. */
const merged = (e: RequestLogEntry): Record<string, string | null> | undefined =>
  (e.method === "PATCH" && e.path === STORE_PATH) || (e.method === "POST" && e.path === STORE_COLLECTION)
    ? (body(e)?.data ?? {})
    : undefined;
/** The images whose attempt counter a store write removes: the reset. */
const resetKeys = (e: RequestLogEntry): string[] =>
  Object.entries(merged(e) ?? {})
    .filter(([, v]) => v === null)
    .map(([name]) => /^refresh-attempt-(.+)$/.exec(name)?.[1])
    .filter((x): x is string => x !== undefined && IMAGE_KEYS.includes(x));
const same = (a: Count, b: Count) =>
  a.kind === b.kind && (a.kind === "untrusted" || numberOf(a) === numberOf(b));
const isLegacy = (name: string) =>
  name.includes("/") && (LEGACY as readonly string[]).includes(name.slice(name.lastIndexOf("/") + 1));
/** The store holds an entry of the image: then the legacy annotations no longer count for it. */
const inStore = (book: Record<string, string>, key: string) =>
  imageKeysOf(key).some((n) => book[n] !== undefined);
/** The image's bookkeeping as the tick reads it: the store's, or the legacy annotations' while it has none. */
const bookOf = (
  _c: { before: Before },
  book: Record<string, string>,
  legacy: Record<string, string>,
  key: string,
) => (inStore(book, key) ? { own: book, prefix: "" } : { own: legacy, prefix: PREFIX });
function countIn(
  c: { before: Before },
  book: Record<string, string>,
  legacy: Record<string, string>,
  key: string,
) {
  const b = bookOf(c, book, legacy, key);
  return b.prefix ? attemptOf(b.own, b.prefix, key) : countOf(b.own[`refresh-attempt-${key}`]);
}
function flapIn(
  c: { before: Before },
  book: Record<string, string>,
  legacy: Record<string, string>,
  key: string,
) {
  const b = bookOf(c, book, legacy, key);
  return b.prefix ? flapOf(b.own, b.prefix, key) : b.own[`refresh-flap-detected-${key}`];
}
/** Every target workload of the image was settled and healthy before the tick. */
const settledImage = (c: { before: Before }, key: string) =>
  (TARGETS[key] ?? []).every((t) => c.before.settled[t.w.name] === true);

interface Ctx {
  w: InProcessWorld;
  before: Before;
  result: Tick["result"];
  log: RequestLogEntry[];
  was: Record<string, string>;
  after: Record<string, string>;
  /** The legacy annotations before and after. */
  legacyWas: Record<string, string>;
  legacyAfter: Record<string, string>;
  must(cond: boolean, rule: string): void;
}
/** The image's attempt count before and after the tick, as the tick reads it. */
const attemptBefore = (c: Ctx, key: string) => countIn(c, c.was, c.legacyWas, key);
const attemptAfter = (c: Ctx, key: string) => countIn(c, c.after, c.legacyAfter, key);

export function checkTick(
  w: InProcessWorld,
  t: { before: Before; tick: Tick; story: Story; faults: Faults },
): void {
  const { before, story } = t;
  const { result } = t.tick;
  const log = [...w.api.log];
  const after = w.book();
  const was = before.book;
  const legacyAfter = w.annotations();
  const trail = log
    .map((e) => `  ${e.method} ${e.path} ${e.status} ${e.body ?? ""}`.slice(0, 300))
    .join("\n");
  const must = (cond: boolean, rule: string) => {
    if (!cond)
      throw new Error(
        `${rule}\noutcome ${result.outcome} (${result.reason}): ${result.message}\nbefore ${JSON.stringify(was)} ${JSON.stringify(before.annotations)}\nafter ${JSON.stringify(after)} ${JSON.stringify(legacyAfter)}\nrequests:\n${trail}\nlog:\n${w.lines.join("")}`,
      );
  };
  const c: Ctx = { w, before, result, log, was, after, legacyWas: before.annotations, legacyAfter, must };
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
  } else if (!faulted) must(false, "(8) the last line does not list every image");

  checkRollouts(c, verdicts);
  checkCounts(c);
  checkRecords(c);
  checkLockout(c, faulted);
  checkSkipStreak(c, verdicts, faulted);
  checkUnresolved(c, verdicts, t.faults.api);
  if (!faulted) checkIsolation(c);
  checkLegacy(c, story);
  checkWorkloadWrites(c, story);
  checkLiveSpec(c, story, faulted);

  // (7) a healthy, unchanged installation writes nothing.
  const unchanged = IMAGE_KEYS.every(
    (key) =>
      was[k(`last-refreshed-${key}-digest`)] === before.current[key] && !was[k(`unresolved-streak-${key}`)],
  );
  // nothing to tidy: the store holds the recorded digests and nothing else
  const quiet =
    Object.keys(was).every((name) => /^last-refreshed-.+-digest$/.test(name)) &&
    Object.keys(before.annotations).every((name) => !name.startsWith(`${PREFIX}/`)) &&
    IMAGE_KEYS.every((key) => onPin(c, key, before.current[key] as string));
  const settled = IMAGE_KEYS.every((key) => settledImage(c, key));
  if (!faulted && !t.faults.unresolved && settled && unchanged && quiet) {
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
  const { log, must } = c;
  const back = reverts(log);
  log.forEach((e, i) => {
    if (back.has(e)) {
      checkRevert(c, e);
      return;
    }
    for (const key of carried(e)) {
      must(IMAGE_KEYS.includes(key), `(1) a patch pins an unknown repository: ${e.body}`);
      const n = attemptBefore(c, key);
      const want = String(numberOf(n) + 1);
      const persisted = log
        .slice(0, i)
        .some((x) => ok(x) && merged(x)?.[k(`refresh-attempt-${key}`)] === want);
      must(persisted, `(1) ${key} was patched before its attempt ${want} was persisted`);
      must(numberOf(n) < MAX_ATTEMPTS, `(1) ${key} was patched at count ${numberOf(n)}`);
      // A failure that brings the count to the maximum announces the lockout on its own tick.
      const outcomes =
        Number(want) >= MAX_ATTEMPTS ? ["refreshed", "failed", "locked_out"] : ["refreshed", "failed"];
      if (verdicts && ok(e))
        must(outcomes.includes(verdicts[key] ?? ""), `(8) ${key} patched but ${verdicts[key]}`);
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
    // images that share a workload move together: a failed patch of one fails its whole group
    const names = new Set((TARGETS[key] ?? []).map((t) => t.w.name));
    const group = IMAGE_KEYS.filter((o) => (TARGETS[o] ?? []).some((t) => names.has(t.w.name)));
    const groupTried = log.some((e) => carried(e).some((x) => group.includes(x)));
    if (verdicts[key] === "failed")
      must(tried || groupTried, `(8) ${key} failed without a patch of its group`);
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
 * tick, and a workload put back runs them when the tick ends.
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
  const { log, must } = c;
  const reset = new Set(log.filter(ok).flatMap(resetKeys));
  for (const key of IMAGE_KEYS) {
    const start = attemptBefore(c, key);
    const end = attemptAfter(c, key);
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
      const m = /^last-refreshed-(.+)-digest$/.exec(name);
      if (!m?.[1]) continue;
      const key = m[1];
      must(digest === before.current[key], `(3) recorded ${digest} for ${key}, not what the registry serves`);
      // a first observation (a legacy digest migrating into the store counts as the same digest)
      if (was[name] === undefined && c.legacyWas[`${PREFIX}/${name}`] === undefined) continue;
      if (was[name] === undefined && c.legacyWas[`${PREFIX}/${name}`] === digest) continue;
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
    must(
      Object.keys(merged(e) ?? {}).every((n) => !n.startsWith("last-refreshed-")),
      "(4) the reset carries a digest write",
    );
    if (!ok(e)) continue;
    for (const key of resetKeys(e))
      for (const name of [
        `refresh-attempt-${key}`,
        `refresh-flap-detected-${key}`,
        `refresh-attempt-traceparent-${key}`,
        `failed-${key}-digest`,
      ])
        must(after[k(name)] === undefined, `(4) ${name} still set after a successful reset`);
  }
}

/** (5) a lockout or an untrusted count holds the image's workloads; the marker is written once. */
function checkLockout(c: Ctx, faulted: boolean): void {
  const { log, was, after, before, result, must } = c;
  const writes = log.filter(ok).flatMap((e) => Object.entries(merged(e) ?? {}));
  const reset = new Set(log.filter(ok).flatMap(resetKeys));
  for (const key of IMAGE_KEYS) {
    const n = attemptBefore(c, key);
    const locked = n.kind === "trusted" && n.value >= MAX_ATTEMPTS;
    const flap = flapIn(c, was, c.legacyWas, key);
    const flapAfter = flapIn(c, after, c.legacyAfter, key);
    if (locked || n.kind === "untrusted") {
      // every workload this image is in: a lockout exists to stop churning it, for any image
      const names = new Set<string>((TARGETS[key] ?? []).map((t) => t.w.name));
      const touched = log.filter((e) => imageOps(e).length > 0 && names.has(workloadName(e)));
      must(touched.length === 0, `(5) a workload of ${key} was patched at count ${JSON.stringify(n)}`);
    }
    // only a reset (every target settled) or a re-arm removes it
    if (flap !== undefined && !reset.has(key))
      must(flapAfter !== undefined, `(5) ${key}'s flap marker vanished without a re-arm`);
    for (const [name, v] of writes) {
      if (name !== k(`refresh-flap-detected-${key}`) || v === null) continue;
      const migration = !inStore(was, key) && flap !== undefined && v === flap;
      const marker = flap === undefined && locked && v === String(numberOf(n));
      // A rollout seen to fail that brings the count to the maximum writes the marker on its tick.
      const reached = numberOf(n) + 1 >= MAX_ATTEMPTS && v === String(numberOf(n) + 1);
      const failedNow = reached && writes.some(([w, x]) => w === k(`failed-${key}-digest`) && x !== null);
      must(
        migration || marker || failedNow,
        `(5) ${key}'s flap marker written as ${v} while ${flap ?? "absent"}`,
      );
    }
    const changed = was[k(`last-refreshed-${key}-digest`)] !== before.current[key];
    const recorded = was[k(`last-refreshed-${key}-digest`)] !== undefined;
    // the tick saw the new build (resolved, and its targets settled): a refresh was due
    const due = locked && changed && recorded && !faulted && settledImage(c, key) && resolvedOnly(c, key);
    if (due) must(flapAfter !== undefined, `(5) ${key} locked out without its flap marker`);
    // a lockout fails the Job on every tick it lasts, not only the one that trips it
    if (due) must(EXIT_ONE.has(result.outcome), `(5) ${key} locked out, yet the tick exits 0`);
  }
}

/**
 * (6) per image: every tick an image is skipped or frozen (a target not settled) counts its
 * skip-streak; frozen only at the ceiling; a removed streak stays removed; a failed removal goes on.
 */
function checkSkipStreak(c: Ctx, verdicts: Record<string, string> | undefined, faulted: boolean): void {
  const { log, was, after, result, must } = c;
  if (result.reason === "streak_not_counted") must(faulted, "(6) a streak went uncounted without a fault");
  for (const key of IMAGE_KEYS) {
    const name = k(`skip-streak-${key}`);
    const start = countOf(was[name]);
    const v = verdicts?.[key];
    if ((v === "skipped" || v === "frozen") && start.kind !== "untrusted" && !faulted) {
      const n = numberOf(start) + 1;
      must(numberOf(countOf(after[name])) === n, `(6) ${key} was ${v} but its skip was not counted`);
      must((v === "frozen") === n >= MAX_SKIPS, `(6) ${key} ${v} at skip ${n}/${MAX_SKIPS}`);
    }
    if (v === "skipped" || v === "frozen")
      must(!settledImage(c, key) || faulted, `(6) ${key} ${v} though all its targets were settled`);
    // the guard, per image: a target that does not settle holds the image and its workloads
    const names = new Set((TARGETS[key] ?? []).map((t) => t.w.name));
    if ([...names].some((n) => c.before.unsettled[n])) {
      must(
        !log.some((e) => imageOps(e).length > 0 && carried(e).includes(key)),
        `(6) ${key} was patched while a target of it was not settled`,
      );
      must(
        !["refreshed", "failed"].includes(v ?? ""),
        `(6) ${key} ${v} while a target of it was not settled`,
      );
    }
    const clear = log.findIndex((e) => merged(e)?.[name] === null);
    if (clear < 0) continue;
    const e = log[clear] as RequestLogEntry;
    // a removal that rides with a count (+1) fails with it: that failure is the count's
    const counting = Object.values(merged(e) ?? {}).some((v) => v !== null);
    if (ok(e)) must(after[name] === undefined, `(6) ${key}'s cleared streak came back`);
    else if (!counting)
      must(
        // It went on: later writes, or a verdict reached on its own grounds (not an error).
        log.slice(clear + 1).some((x) => x.method !== "GET") || result.outcome !== "error",
        "(6) a failed streak clear stopped the tick",
      );
  }
}

/**
 * Unresolved images (no 200 for their manifest HEAD this tick): streak + 1 whatever else holds
 * the image, never noop, stale exactly at the ceiling with one ImageStale Event about each of its
 * workloads; a resolved image's streak is removed.
 */
function checkUnresolved(c: Ctx, verdicts: Record<string, string> | undefined, apiFaulted: boolean): void {
  const { w, log, was, after, result, must } = c;
  if (!(log[0] && ok(log[0]))) return;
  const resolved = (key: string) =>
    w.registry.log.some(
      (e) => e.method === "HEAD" && e.path === `/v2/myorg/${key}/manifests/stable` && e.status === 200,
    );
  const staleFor = (key: string) =>
    log.filter(
      (e) =>
        e.method === "POST" &&
        e.path.endsWith("/events") &&
        body(e)?.reason === "ImageStale" &&
        String(body(e)?.note).includes(`resolve myorg/${key}:stable`),
    ).length;
  const limited = w.registry.log.some((e) => e.status === 429);
  for (const key of IMAGE_KEYS) {
    const name = k(`unresolved-streak-${key}`);
    const n = countOf(was[name]);
    const workloads = new Set((TARGETS[key] ?? []).map((t) => t.w.name)).size;
    const events = staleFor(key);
    if (resolved(key)) {
      // a 429 aborts the HEADs to its registry still in flight: one the registry answered 200 to
      // may never have reached the tick, so it may have gone either way
      if (limited) must(events === 0 || events === workloads, `(10) ${key}: ${events} ImageStale Events`);
      else {
        must(events === 0, `(10) ${key} resolved, yet ImageStale`);
        if (!apiFaulted) must(after[name] === undefined, `(10) ${key} resolved, its streak stayed`);
      }
      continue;
    }
    must(result.outcome !== "noop", `(10) ${key} unresolved, yet the tick is noop`);
    if (n.kind === "untrusted") continue;
    const next = numberOf(n) + 1;
    if (next >= MAX_UNRESOLVED) must(EXIT_ONE.has(result.outcome), `(10) ${key} stale, yet exit 0`);
    if (apiFaulted) continue;
    must(after[name] === String(next), `(10) ${key}'s unresolved streak is not ${next}`);
    // a freeze reached on the same tick posts its own Event (about the workload that does not settle)
    const want = next === MAX_UNRESOLVED && verdicts?.[key] !== "frozen" ? workloads : 0;
    must(events === want, `(10) ${key}: ${events} ImageStale Events, want ${want} (one per workload)`);
  }
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
    const done = attemptAfter(c, key).kind === "absent";
    if (healthy) {
      must(done, `(9) ${key}'s workloads all settled, yet it was not reset`);
      must(
        after[k(`last-refreshed-${key}-digest`)] === before.current[key],
        `(9) ${key}'s workloads all settled, yet it was not recorded`,
      );
    } else must(!done, `(9) ${key}'s group has a workload that never settled, yet it was reset`);
    for (const other of group)
      must(
        (attemptAfter(c, other).kind === "absent") === done,
        `(9) ${key} and ${other} share a workload but were not reset together`,
      );
  }
}

/**
 * (11) Legacy annotations are carried into the store and never written anywhere again: no store
 * key is a legacy name, no write sets one; once removed from the state workload they stay removed.
 */
function checkLegacy(c: Ctx, story: Story): void {
  const { log, after, legacyAfter, must } = c;
  for (const e of log.filter((x) => merged(x)))
    for (const [name, v] of Object.entries(merged(e) ?? {}))
      must(!name.includes("/") || v === null, `(11) a prefixed key ${name} written to the store as ${v}`);
  must(
    Object.keys(after).every((name) => !isLegacy(name) && !name.startsWith(`${PREFIX}/`)),
    "(11) a legacy key is in the store",
  );
  if (story.migrated)
    must(
      Object.keys(legacyAfter).every((name) => !name.startsWith(`${PREFIX}/`) || !isLegacyAnnotation(name)),
      "(11) a legacy annotation is back on the state workload after its removal",
    );
}
const isLegacyAnnotation = (name: string) =>
  /^[^/]+\/(refresh-|last-refreshed-|unresolved-streak|repin-streak|rejected-|candidates-|paused-|registry-retry)/.test(
    name,
  );

/**
 * (15) Workloads are written only to set images: every workload write is a JSON patch of image
 * fields (each `replace` of a container's image with the `test` of its name), or the one-time
 * removal of migrated legacy annotations from the state workload, removing nothing else.
 */
function checkWorkloadWrites(c: Ctx, story: Story): void {
  const { log, must } = c;
  for (const e of log) {
    if (e.method === "GET" || !e.path.startsWith("/apis/apps/")) continue;
    if (isJsonPatch(e) && e.method === "PATCH") {
      for (const op of body(e) as any[])
        must(
          (op.op === "replace" && /\/containers\/\d+\/image$/.test(String(op.path))) ||
            (op.op === "test" && /\/containers\/\d+\/name$/.test(String(op.path))),
          `(15) a workload patch does more than set images: ${e.body}`,
        );
      continue;
    }
    const b = body(e);
    const annotations = b?.metadata?.annotations ?? {};
    const only =
      e.method === "PATCH" &&
      e.path === STATE_PATH &&
      Object.keys(b ?? {}).join() === "metadata" &&
      Object.keys(b.metadata).join() === "annotations" &&
      Object.entries(annotations).every(([n, v]) => v === null && isLegacyAnnotation(n) && n in c.legacyWas);
    must(only, `(15) a workload write other than images: ${e.method} ${e.path} ${e.body}`);
    if (!ok(e)) continue;
    story.migrated = true;
    for (const n of Object.keys(annotations)) {
      must(inStoreName(c, n), `(15) ${n} removed from the state workload before the store held it`);
      must(!story.unlabelled.includes(n), `(15) ${n} was removed from the state workload twice`);
      story.unlabelled.push(n);
    }
  }
}
/** A legacy annotation's value is in the store now (its image has entries there, or it is the retry time). */
function inStoreName(c: Ctx, name: string): boolean {
  const local = name.slice(name.indexOf("/") + 1);
  if (local === "registry-retry-after") return true;
  const keys = IMAGE_KEYS.filter((key) => local.includes(key));
  const single = (LEGACY as readonly string[]).includes(local) || local === "refresh-skip-streak";
  return (single ? IMAGE_KEYS : keys).every((key) => inStore(c.after, key));
}

// --- the live spec: each target container's image, as the per-image verdict reads it ------------

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
      settledImage(c, key) &&
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
