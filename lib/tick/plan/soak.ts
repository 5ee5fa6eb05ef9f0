// minimumAge: a new build of the tag waits in `candidates-<key>` until this
// installation has seen it for minimumAge by the tick's clock (the API server's Date); then the
// newest candidate that has aged rolls out by digest. Pure, like the rest of the verdict.
import { IMAGE_KEYS } from "../../state/keys.ts";
import { trusted } from "../../state/values.ts";
import {
  addCandidate,
  afterRollout,
  type Candidate,
  chooseCandidate,
  dueAt,
  formatCandidates,
  parseCandidates,
  stamp,
  trim,
} from "./candidates.ts";
import type { DueInput } from "./case.ts";
import { due } from "./due.ts";
import { amend, type Judgement, say } from "./judgement.ts";

export function soak(given: Judgement, input: DueInput, recorded: string): Judgement {
  const { img, c, o, digest: L, b } = input;
  const key = IMAGE_KEYS.candidates.name(img.key);
  const rejected = trusted(b.rejected);
  if (o.clock === undefined) throw new Error("minimumAge needs the tick's clock (Observed.clock)");
  const clock = o.clock;
  const raw = b.candidates.kind === "absent" ? undefined : b.candidates.raw;
  const parsed = parseCandidates(raw);
  // An unreadable entry has no first-seen time to trust: dropping it can only make a build wait
  // longer, never roll out sooner, so the tick goes on and rewrites the list (and says so).
  const warnings = [
    `${key} has entries that are not <digest>=<RFC 3339 time>: ${parsed.unreadable.map((e) => JSON.stringify(e)).join(", ")}; they are dropped and the list is rewritten (a build among them waits its minimumAge again)`,
  ];
  const warned = parsed.unreadable.length > 0 ? amend(given, { verdict: { warnings } }) : given;
  // The tag moved back to an older candidate: every build first seen after it was withdrawn.
  const back = parsed.list.find((x) => x.digest === L);
  const kept = parsed.list.filter((x) => x.digest !== recorded && (!back || x.seen <= back.seen));
  const all = addCandidate(kept, L, clock);
  // A rejected build never rolls out, also when it aged as a candidate before the tag moved on.
  const chosen = chooseCandidate(all, {
    clock,
    minimumAgeMs: c.minimumAgeMs,
    excluded: [recorded, rejected],
  });
  const list = trim(all, chosen?.digest);
  const value = formatCandidates(list);
  const j = value !== (raw ?? null) ? amend(warned, { writes: { [key]: value } }) : warned;
  if (!chosen) return pending(j, input, list);
  const tried = due(j, { ...input, digest: chosen.digest });
  if (!tried.due) return tried;
  // The record removes the rejected marker (apply.ts), so a rejected build leaves the list with it.
  const candidates = formatCandidates(afterRollout(list, chosen, [recorded, rejected]));
  const d = amend(tried, { due: { ...tried.due, candidates }, verdict: { digest: chosen.digest } });
  const seen = `first seen ${stamp(chosen.seen)}, minimumAge ${age(c.minimumAgeMs)}`;
  const newer = chosen.digest === L ? "" : `; the tag now names ${L}, which waits its turn`;
  return say(d, {
    outcome: "refreshed",
    reason: "digest_changed",
    message: `${img.key}: build ${chosen.digest} has aged (${seen})${newer}; refresh attempt ${tried.due.count}/${c.maxRefreshAttempts}`,
  });
}

/** No candidate old enough: the one due first (the oldest that may roll out) is named, with when. */
function pending(judgement: Judgement, { img, c, o, digest: L, b }: DueInput, list: Candidate[]): Judgement {
  const clock = o.clock as number;
  const rejected = trusted(b.rejected);
  const waiting = list.filter((x) => x.digest !== rejected);
  const next = waiting[waiting.length - 1] ?? (list[0] as Candidate);
  const at = dueAt(next, c.minimumAgeMs);
  const waits = amend(judgement, { verdict: { digest: L, short: `(due ${stamp(at)})` } });
  // The tag's build can be trimmed from a full list whose times tie with it (a hand-edited list).
  const current = list.find((x) => x.digest === L);
  const when = current
    ? `due ${stamp(dueAt(current, c.minimumAgeMs))}`
    : "not kept: the list holds at most 5";
  const tag = next.digest === L ? "" : `; the tag now names ${L} (${when})`;
  const msg = `${img.key}: build ${next.digest} waits out minimumAge ${age(c.minimumAgeMs)}: first seen ${stamp(next.seen)}, due ${stamp(at)} (in ${age(at - clock)})${tag}`;
  return say(waits, { outcome: "pending", reason: "minimum_age", message: msg });
}

/** `2h59m`, `40s`: a wait as a human reads it, whole seconds. */
export function age(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [h ? `${h}h` : "", m ? `${m}m` : "", s % 60 || s === 0 ? `${s % 60}s` : ""];
  return parts.join("");
}
