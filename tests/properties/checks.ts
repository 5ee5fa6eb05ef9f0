// The invariants checked after every tick of tick.property.test.ts, numbered as in issue 6.
// Each reads only the API request log of this tick, the state object before and after, and
// the simulators' truth (current digests, live images), never the tick's own account of itself.
// biome-ignore-all lint/suspicious/noExplicitAny: request bodies and API objects are free-form JSON
import { readCounter } from "../../lib/annotations.ts";
import { exitCodeFor, OUTCOMES } from "../../lib/outcomes.ts";
import type { RequestLogEntry } from "../../sim/apiserver/index.ts";
import { type InProcessWorld, MAX_ATTEMPTS, PREFIX, STATE_PATH, TARGETS } from "./inprocess.ts";

export interface Before {
  annotations: Record<string, string>;
  current: Record<string, string>;
  /** The state object read as settled by kubectl's rules, and its controller healthy. */
  stateSettled: boolean;
}
/** Rollout ticks since the story began or a human re-armed: what the counter must equal. */
export interface Story {
  rolloutTicks: number;
}
interface Tick {
  result: {
    outcome: string;
    reason: string;
    message: string;
    decision?: { actions: Array<{ type: string }> };
  };
  ms: number;
  budgetMs: number;
}

const k = (name: string) => `${PREFIX}/${name}`;
const ok = (e: RequestLogEntry) => e.status >= 200 && e.status < 300;
const body = (e: RequestLogEntry): any => JSON.parse(e.body ?? "null");
const isJsonPatch = (e: RequestLogEntry) => e.contentType?.startsWith("application/json-patch+json") ?? false;
const isImagePatch = (e: RequestLogEntry) =>
  e.method === "PATCH" && isJsonPatch(e) && body(e).some((op: any) => String(op.path).endsWith("/image"));
const isReset = (e: RequestLogEntry) =>
  e.method === "PATCH" &&
  e.path === STATE_PATH &&
  isJsonPatch(e) &&
  body(e).some((op: any) => op.op === "remove" && String(op.path).endsWith("~1refresh-attempt"));
/** The annotations a merge patch of the state object sets (null: removes). */
const merged = (e: RequestLogEntry): Record<string, string | null> | undefined =>
  e.method === "PATCH" && e.path === STATE_PATH && !isJsonPatch(e)
    ? body(e)?.metadata?.annotations
    : undefined;
const count = (v: string | undefined) => {
  const c = readCounter(v);
  return c.kind === "trusted" ? c.value : c.kind === "absent" ? 0 : Number.NaN;
};

export function checkTick(
  w: InProcessWorld,
  t: { before: Before; tick: Tick; story: Story; faulted: boolean },
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
  const start = count(was[k("refresh-attempt")]);
  const imagePatches = log.map((e, i) => [e, i] as const).filter(([e]) => isImagePatch(e));
  const rolled = imagePatches.length > 0;

  // (8) outcomes come from the closed set and map to exit codes; no tick outlives its deadline.
  must((OUTCOMES as readonly string[]).includes(result.outcome), "(8) outcome outside the closed set");
  const zero = ["noop", "recorded", "refreshed", "skipped", "locked_out"].includes(result.outcome);
  must(exitCodeFor(result.outcome as never) === (zero ? 0 : 1), "(8) wrong exit code for the outcome");
  must(t.tick.ms <= t.tick.budgetMs + 1000, `(8) tick took ${t.tick.ms} ms, budget ${t.tick.budgetMs} ms`);
  must(
    rolled === ["refreshed", "failed"].includes(result.outcome),
    "(8) workloads patched iff refreshed/failed",
  );

  // (1) no workload patch unless count+1 was persisted first, in this tick.
  if (rolled) {
    const first = imagePatches[0]?.[1] ?? 0;
    const persisted = log
      .slice(0, first)
      .some((e) => ok(e) && merged(e)?.[k("refresh-attempt")] === String(start + 1));
    must(persisted, `(1) a workload was patched before attempt ${start + 1} was persisted`);
  }

  // (2) at most maxRefreshAttempts rollout ticks per story; the counter is exactly that number.
  if (rolled) story.rolloutTicks += 1;
  const reset = log.find((e) => isReset(e) && ok(e));
  if (reset) story.rolloutTicks = 0;
  must(story.rolloutTicks <= MAX_ATTEMPTS, `(2) ${story.rolloutTicks} rollout ticks in one story`);
  must(
    count(after[k("refresh-attempt")]) === story.rolloutTicks,
    "(2) counter differs from the rollout ticks",
  );

  // (3) a digest is recorded on first observation, or after every target settled and the reset.
  for (const e of log.filter((x) => ok(x) && merged(x))) {
    for (const [key, digest] of Object.entries(merged(e) ?? {})) {
      const m = /^image-refresh\.io\/last-refreshed-(.+)-digest$/.exec(key);
      if (!m?.[1]) continue;
      must(
        digest === before.current[m[1]],
        `(3) recorded ${digest} for ${m[1]}, not what the registry serves`,
      );
      if (was[key] === undefined) continue;
      must(
        reset !== undefined && log.indexOf(reset) < log.indexOf(e),
        `(3) ${m[1]} recorded without a reset`,
      );
      for (const { w: x, container } of TARGETS[m[1]] ?? []) {
        const spec = w.api.getObject(x.kind, x.namespace, x.name).spec.template.spec;
        const image = spec.containers.find((c: any) => c.name === container)?.image;
        must(image === `${w.registry.host}/myorg/${m[1]}@${digest}`, `(3) ${x.name} not on ${digest}`);
      }
    }
  }

  // (4) the reset is its own request and never waits on the digest write.
  for (const e of log.filter(isReset))
    must(!JSON.stringify(body(e)).includes("last-refreshed"), "(4) the reset carries a digest write");
  if (reset) {
    must(after[k("refresh-attempt")] === undefined, "(4) counter still set after a successful reset");
    must(after[k("refresh-flap-detected")] === undefined, "(4) marker still set after a successful reset");
  }

  // (5) a lockout holds: no rollout, the count and an existing marker stay.
  if (start >= MAX_ATTEMPTS) {
    must(!rolled, "(5) a workload was patched during a lockout");
    must(after[k("refresh-attempt")] === was[k("refresh-attempt")], "(5) the lockout count changed");
  }
  if (was[k("refresh-flap-detected")] !== undefined)
    must(after[k("refresh-flap-detected")] !== undefined, "(5) the flap marker vanished without a re-arm");

  // (6) every unsettled tick counts; a settled tick clears the streak; a failed clear goes on.
  const streak = count(was[k("refresh-skip-streak")]);
  if (["not_settled", "skip_ceiling"].includes(result.reason))
    must(count(after[k("refresh-skip-streak")]) === streak + 1, "(6) an unsettled tick was not counted");
  if (result.reason === "streak_not_counted") must(t.faulted, "(6) a skip went uncounted without a fault");
  const clear = log.findIndex((e) => merged(e)?.[k("refresh-skip-streak")] === null);
  if (clear >= 0) {
    const e = log[clear] as RequestLogEntry;
    if (ok(e)) must(after[k("refresh-skip-streak")] === undefined, "(6) a cleared streak came back");
    const more = (result.decision?.actions.length ?? 0) > 1;
    if (!ok(e) && more)
      must(
        log.slice(clear + 1).some((x) => x.method !== "GET"),
        "(6) a failed streak clear stopped the tick",
      );
  }

  // (7) a healthy, unchanged installation writes nothing.
  const unchanged = Object.keys(TARGETS).every(
    (key) => was[k(`last-refreshed-${key}-digest`)] === before.current[key],
  );
  if (!t.faulted && before.stateSettled && unchanged && was[k("refresh-skip-streak")] === undefined) {
    must(result.outcome === "noop", "(7) a healthy unchanged tick did something");
    must(
      log.every((e) => e.method === "GET"),
      "(7) a healthy unchanged tick wrote",
    );
  }
}
