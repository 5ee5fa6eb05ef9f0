// minimumAge: a new build of the tag waits in `candidates-<key>` until this
// installation has seen it for minimumAge by the tick's clock (the API server's Date); then the
// newest candidate that has aged rolls out by digest. Pure, like the rest of the verdict.
import { annotationKeys } from "../../annotations.ts";
import { formatWait } from "../../duration.ts";
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
import { amend, type DueInput, due, type Judgement, say } from "./due.ts";

export function soak(input: DueInput & { recorded: string }): Judgement {
  const { img, c, o, digest: L, counters, recorded } = input;
  const key = annotationKeys(c.annotationPrefix).image(img.key).candidates;
  if (o.clock === undefined) throw new Error("minimumAge needs the tick's clock (Observed.clock)");
  const clock = o.clock;
  const raw = o.state.annotations[key];
  const parsed = parseCandidates(raw);
  // An unreadable entry has no first-seen time to trust: dropping it can only make a build wait
  // longer, never roll out sooner, so the tick goes on and rewrites the list (and says so).
  const warnings =
    parsed.unreadable.length > 0
      ? [
          `${key} has entries that are not <digest>=<RFC 3339 time>: ${parsed.unreadable.map((e) => JSON.stringify(e)).join(", ")}; they are dropped and the list is rewritten (a build among them waits its minimumAge again)`,
        ]
      : undefined;
  const all = addCandidate(
    parsed.list.filter((x) => x.digest !== recorded),
    L,
    clock,
  );
  // A rejected build never rolls out, also when it aged as a candidate before the tag moved on.
  const chosen = chooseCandidate(all, clock, c.minimumAgeMs, [recorded, counters.rejected]);
  const list = trim(all, chosen?.digest);
  const value = formatCandidates(list);
  const j = amend(input.j, {
    ...(warnings ? { verdict: { warnings } } : {}),
    ...(value !== (raw ?? null) ? { writes: { [key]: value } } : {}),
  });
  if (!chosen) return pending({ ...input, j, list });
  const d = due({ ...input, j, digest: chosen.digest });
  if (!d.due) return d;
  // The record removes the rejected marker (apply.ts), so a rejected build leaves the list with it.
  const candidates = formatCandidates(afterRollout(list, chosen, [recorded, counters.rejected]));
  const seen = `first seen ${stamp(chosen.seen)}, minimumAge ${formatWait(c.minimumAgeMs)}`;
  const newer = chosen.digest === L ? "" : `; the tag now names ${L}, which waits its turn`;
  const message = `${img.key}: build ${chosen.digest} has aged (${seen})${newer}; refresh attempt ${d.due.count}/${c.maxRefreshAttempts}`;
  return say(
    d,
    { outcome: "refreshed", reason: "digest_changed", message },
    { due: { ...d.due, candidates }, verdict: { digest: chosen.digest } },
  );
}

/** No candidate old enough: the one due first (the oldest that may roll out) is named, with when. */
function pending({ j, img, c, o, digest: L, counters, list }: DueInput & { list: Candidate[] }): Judgement {
  const clock = o.clock as number;
  const waiting = list.filter((x) => x.digest !== counters.rejected);
  const next = waiting[waiting.length - 1] ?? (list[0] as Candidate);
  const at = dueAt(next, c.minimumAgeMs);
  // The tag's build can be trimmed from a full list whose times tie with it (a hand-edited list).
  const current = list.find((x) => x.digest === L);
  const when = current
    ? `due ${stamp(dueAt(current, c.minimumAgeMs))}`
    : "not kept: the list holds at most 5";
  const tag = next.digest === L ? "" : `; the tag now names ${L} (${when})`;
  const msg = `${img.key}: build ${next.digest} waits out minimumAge ${formatWait(c.minimumAgeMs)}: first seen ${stamp(next.seen)}, due ${stamp(at)} (in ${formatWait(at - clock)})${tag}`;
  return say(
    j,
    { outcome: "pending", reason: "minimum_age", message: msg },
    { verdict: { digest: L, short: `(due ${stamp(at)})` } },
  );
}
