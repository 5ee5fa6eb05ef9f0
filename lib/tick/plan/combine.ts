// Combines per-image judgements into one tick's plan: isolation, which
// writes travel together, and the order of rollouts. Pure: every branch is a row in combine.test.ts.
//
// Images that share no workload are independent. Images that share a workload move together: a
// workload that carries a held, locked-out or paused image is patched for none (the lockout exists
// to stop churning that workload), and a rollout's failure fails every image of its group.
import type { Config, ImageConfig, Target } from "../../config.ts";
import { groupOf, imageGroups } from "../../groups.ts";
import { holdsSharers, mostSevere } from "../../outcomes.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import type {
  Action,
  Decision,
  ImageVerdict,
  Observed,
  ObservedWorkload,
  Rollout,
  RolloutContainer,
  StateWrite,
  WorkloadRef,
} from "../model.ts";
import { describeWorkload, workloadId } from "../model.ts";
import type { Judgement, Said } from "./judgement.ts";
import { type RegistryWrites, registryWrites } from "./registry-writes.ts";

export function combine(observed: Observed, config: Config, given: Map<string, Judgement>): Decision {
  const judged = holdSharers(config, given);
  // Due images grouped by shared workloads, numbered in config order.
  const groups = groupOf(imageGroups(config.images.filter((img) => judged.get(img.key)?.due)));
  const answer = registryWrites(observed, config);
  const write = stateWrite(observed, judged, answer);
  const actions: Action[] = [];
  if (write) actions.push({ type: "write-state", ...write });
  for (const img of config.images) {
    const j = judged.get(img.key) as Judgement;
    for (const e of j.events ?? [])
      actions.push({
        type: "event",
        eventType: "Warning",
        ...e,
        image: img.key,
        regarding: e.regarding ?? targetsOf(img),
      });
  }
  // A regression's count is a failure: it is never reset, and only its revert is recorded.
  const due = [...judged.values()].filter((j) => j.due && !j.due.regression);
  actions.push(
    ...rollouts(observed, { config, judged, groups }).map((r): Action => ({ type: "rollout", ...r })),
  );
  const back = [...judged.values()].filter((j) => j.due?.regression?.back);
  if (back.length)
    actions.push({
      type: "record-revert",
      digests: Object.fromEntries(back.map((j) => [j.verdict.key, j.due?.digest as string])),
    });
  // A verified retry of a build that regressed keeps its count: it passed verifyFor before too,
  // and only a count that survives it stops the build going out and regressing for ever.
  const resets = due.filter((j) => !retriesRegressed(observed, j));
  if (resets.length) {
    const counts = Object.fromEntries(resets.map((j) => [j.verdict.key, j.due?.count as number]));
    actions.push({ type: "reset", counts });
  }
  const record: Record<string, string> = {};
  const candidates: Record<string, string | null> = {};
  const rider: Record<string, string | null> = { ...answer.rider };
  for (const j of judged.values()) {
    // A re-pin's digest is the recorded one already.
    if (j.due && !j.due.repin && !j.due.regression) record[j.verdict.key] = j.due.digest;
    else if (j.firstSeen && !write) {
      record[j.verdict.key] = j.firstSeen;
      if (j.adopt) rider[IMAGE_KEYS.adopt.name(j.verdict.key)] = "1";
    }
    // The candidates a rollout leaves behind go with its record: both land, or neither.
    if (j.due?.candidates !== undefined) candidates[j.verdict.key] = j.due.candidates;
  }
  if (Object.keys(record).length)
    actions.push({
      type: "record-digests",
      digests: record,
      ...(Object.keys(candidates).length ? { candidates } : {}),
      // Without a write before the rollouts, what rides with a write rides with this one.
      ...(!write && Object.keys(rider).length ? { also: rider } : {}),
    });
  const repinned = due.filter((j) => j.due?.repin).map((j) => j.verdict.key);
  if (repinned.length) actions.push({ type: "pin-restored", images: repinned });
  const images = config.images.map((img) => (judged.get(img.key) as Judgement).verdict);
  const groupKeys: Record<number, string[]> = {};
  for (const [key, g] of groups) groupKeys[g] = [...(groupKeys[g] ?? []), key];
  return {
    ...summarise(images),
    images,
    groups: groupKeys,
    actions,
  };
}

/** The due build is the one that regressed last (regressed-<key>-digest). */
function retriesRegressed(observed: Observed, judgement: Judgement): boolean {
  const f = observed.book.images[judgement.verdict.key]?.regressed;
  return f?.kind === "trusted" && f.value === judgement.due?.digest;
}

/** The distinct workloads of an image's targets, in config order: what its Events are about. */
export function targetsOf(img: ImageConfig): WorkloadRef[] {
  const seen = new Map<string, WorkloadRef>();
  for (const t of img.targets)
    seen.set(workloadId(t), { kind: t.kind, namespace: t.namespace, name: t.name });
  return [...seen.values()];
}

/** The tick's outcome is its most severe image verdict, and its reason that image's. */
export function summarise(images: ImageVerdict[]): Pick<Decision, "outcome" | "reason" | "message"> {
  const outcome = mostSevere(images.map((v) => v.outcome));
  const worst = images.find((v) => v.outcome === outcome);
  return {
    outcome,
    reason: worst?.reason ?? "unchanged",
    message: images.map(verdictLine).join("; ") || "no images configured",
  };
}

/** `api: refreshed`, `node-agent: locked_out 3/3`, `agent: unresolved 2/8 (unauthorized)`. */
export function verdictLine(verdict: ImageVerdict): string {
  const detail = verdict.outcome === "refreshed" ? "" : verdict.short ? ` ${verdict.short}` : "";
  return `${verdict.key}: ${verdict.outcome}${detail}`;
}

/** A new judgement: `judgement` held back with the image it waits with (`short` says which). */
function hold(
  judgement: Judgement,
  { outcome, reason, message, short }: Said & { short: string },
): Judgement {
  return {
    ...judgement,
    due: undefined,
    blocks: true,
    verdict: { ...judgement.verdict, outcome, reason, message, short },
  };
}

/** The workload ids an image has a container in. */
function workloadsOf(img: ImageConfig): Set<string> {
  return new Set(img.targets.map(workloadId));
}

/**
 * A due image that shares a workload with a blocking image waits with it, and so, in turn, does
 * every due image that shares a workload with that one: images that share a workload move together.
 */
function holdSharers(config: Config, given: Map<string, Judgement>): Map<string, Judgement> {
  const judged = new Map(given);
  const blockers = (judgement: Judgement) => judgement.blocks || holdsSharers(judgement.verdict.outcome);
  for (let changed = true; changed; ) {
    changed = false;
    for (const img of config.images) {
      const j = judged.get(img.key) as Judgement;
      if (!j.due) continue;
      const mine = workloadsOf(img);
      const by = config.images.find((other) => {
        if (other.key === img.key) return false;
        const oj = judged.get(other.key) as Judgement;
        return blockers(oj) && [...workloadsOf(other)].some((w) => mine.has(w));
      });
      if (!by) continue;
      const bj = judged.get(by.key) as Judgement;
      const [outcome, state] = blockerState(bj);
      const shared = by.targets.find((t) => mine.has(workloadId(t))) as Target;
      const message = `refresh of ${img.key} waits with ${by.key} (${state}), which shares ${describeWorkload(shared)}`;
      judged.set(
        img.key,
        hold(j, { outcome, reason: "shared_workload", message, short: `(waits with ${by.key})` }),
      );
      changed = true;
    }
  }
  return judged;
}

/** What a blocking image is, for the images that wait with it: its own verdict, or its count's state. */
function blockerState(judgement: Judgement): [ImageVerdict["outcome"], string] {
  const v = judgement.verdict;
  if (holdsSharers(v.outcome)) return [v.outcome, `${v.outcome} ${v.reason}`];
  if (v.lockedOut) return ["locked_out", "locked out"];
  return ["held", "its attempt count is not trusted"];
}

/** The one compare-and-swap write before any rollout, or undefined when nothing needs writing. */
function stateWrite(
  observed: Observed,
  judged: Map<string, Judgement>,
  answer: RegistryWrites,
): StateWrite | undefined {
  const change: Record<string, string | null> = { ...answer.correction };
  const w: StateWrite = { change, attempts: {}, repins: [], streaks: [], flaps: [], firstSeen: [] };
  for (const j of judged.values()) {
    Object.assign(change, j.writes);
    const key = j.verdict.key;
    if (j.countsStreak) w.streaks.push(key);
    if (j.flap) w.flaps.push(key);
    if (j.due?.regression) {
      const { counted, failed, at } = j.due.regression;
      if (counted !== false)
        w.attempts[key] = { count: j.due.count, digest: failed, regressed: true, ...(at ? { at } : {}) };
    } else if (j.due) w.attempts[key] = { count: j.due.count, digest: j.due.digest };
    if (j.due?.repin) {
      w.repins.push(key);
      const b = observed.book.images[key];
      if (b?.repin.kind !== "trusted" || b.repin.value !== 1) change[IMAGE_KEYS.repin.name(key)] = "1";
    }
  }
  const counterWrite = w.flaps.length > 0 || Object.keys(w.attempts).length > 0;
  if (Object.keys(change).length === 0 && !counterWrite) return undefined;
  // First observations ride with any write before the rollouts: a failed rollout must not lose them.
  for (const j of judged.values())
    if (j.firstSeen) {
      change[IMAGE_KEYS.digest.name(j.verdict.key)] = j.firstSeen;
      if (j.adopt) change[IMAGE_KEYS.adopt.name(j.verdict.key)] = "1";
      w.firstSeen.push(j.verdict.key);
    }
  Object.assign(change, answer.rider);
  return w;
}

/** One rollout per workload, in the order workloads first appear in the config, carrying all its due containers. */
function rollouts(
  observed: Observed,
  { config, judged, groups }: { config: Config; judged: Map<string, Judgement>; groups: Map<string, number> },
): Rollout[] {
  const rolls = new Map<string, Rollout>();
  for (const img of config.images) {
    const due = judged.get(img.key)?.due;
    // A regression without a build to go back to (or with onFailure: keep) is only counted.
    if (due?.regression && !due.regression.back) continue;
    for (const t of img.targets) {
      const id = workloadId(t);
      if (!rolls.has(id))
        rolls.set(id, {
          workload: { kind: t.kind, namespace: t.namespace, name: t.name },
          containers: [],
          images: [],
          group: -1,
        });
      // A re-pin patches only the containers that are off the pin.
      if (!due || (due.only && !due.only.includes(`${id}/${t.container}`))) continue;
      const roll = rolls.get(id) as Rollout;
      roll.containers.push(
        rolloutContainer(
          observed.workloads?.[id],
          t.container,
          `${img.registry.host}/${img.repository}@${due.digest}`,
        ),
      );
      if (!roll.images.includes(img.key)) roll.images.push(img.key);
      roll.group = groups.get(img.key) as number;
      if (due.regression) roll.back = true;
    }
  }
  return [...rolls.values()].filter((r) => r.containers.length > 0);
}

/** A container to re-image, with where it sits and what it ran as observed: apply needs no second look. */
function rolloutContainer(seen: ObservedWorkload | undefined, name: string, image: string): RolloutContainer {
  if (!seen?.found) return { name, image };
  const path = seen.paths?.[name];
  const before = seen.images[name];
  return {
    name,
    image,
    ...(path !== undefined ? { path } : {}),
    ...(before !== undefined ? { before } : {}),
  };
}
