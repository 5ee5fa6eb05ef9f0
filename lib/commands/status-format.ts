// `status` as text: one block per image, what the operator reads first on top.
import type { Outcome } from "../outcomes.ts";
import { type Ending, parseValue, seenToFail } from "../state/values.ts";
import { age, ofMax } from "../tick/index.ts";
import type { CandidateStatus, ImageStatus, StatusReport, TargetStatus } from "./status-report.ts";
import { headline } from "./status-tense.ts";

/**
 * The lockout is decided by the count alone: a flap marker left behind after
 * maxRefreshAttempts was raised above the count is stale, and the next refresh goes ahead.
 */
function lockoutNote(i: ImageStatus): string {
  const n = parseValue("counter", i.attemptCount ?? undefined);
  if (n.kind === "trusted" && n.value >= i.maxRefreshAttempts)
    return ` — LOCKED OUT${i.flapDetected !== null ? ` (flap detected at ${i.flapDetected})` : ""}${failedNote(i)}`;
  if (i.flapDetected !== null)
    return ` — the flap marker (${i.flapDetected}) is stale: the count is below the maximum, so the next refresh goes ahead`;
  return "";
}

/** A stored streak as `n/max`, never past its max; what is not a count is shown as it is. */
function streak(raw: string | null, max: number): string {
  const n = parseValue("counter", raw ?? undefined);
  if (n.kind === "untrusted") return `${n.raw} (not a count)/${max}`;
  return ofMax(n.kind === "trusted" ? n.value : 0, max);
}

/** The failed build, unless the last attempt was abandoned: then no build is called failed. */
function failedNote(i: ImageStatus): string {
  const e = i.lastAttempt?.ending as Ending | undefined;
  if (e !== undefined && e !== "verified" && !seenToFail(e))
    return "; the last attempt was abandoned, so no build is called failed";
  return i.failedDigest ? `; failed build ${i.failedDigest}` : "";
}

function candidateLines(list: CandidateStatus[]): string[] {
  if (list.length === 0) return ["  candidates (minimumAge): none waiting"];
  return [
    "  candidates (minimumAge), newest first:",
    ...list.map((x) => {
      const left = Date.parse(x.dueAt) - Date.parse(x.firstSeen) - x.ageSeconds * 1000;
      const when = x.due
        ? "aged: the newest aged candidate rolls out on the next tick"
        : `due ${x.dueAt} (in ${age(left)})`;
      return `    ${x.digest} first seen ${x.firstSeen} (${age(x.ageSeconds * 1000)} ago), ${when}`;
    }),
  ];
}

const CLASSIFIED: Record<NonNullable<TargetStatus["classification"]>, string> = {
  in_sync: "in sync: pinned to the recorded digest",
  pinned_elsewhere: "pinned to another digest",
  floating: "the floating tag, not pinned",
  other_tag: "another tag of the repository",
  other_repo: "ANOTHER REPOSITORY than the config names",
};

export function formatReport(r: StatusReport): string {
  const lines = [
    `store: ConfigMap ${r.store.name}${r.store.exists ? "" : " (not created yet: the first tick that writes creates it)"}`,
  ];
  if (r.anonymousRegistry) lines.push(`registry asked ANONYMOUSLY: ${r.anonymousRegistry}`);
  const legacy = Object.entries(r.legacy);
  if (legacy.length)
    lines.push(
      `legacy annotations the next write carries into the store: ${legacy.map(([k, v]) => `${k}=${v}`).join(" ")}`,
    );
  for (const i of r.images) {
    lines.push("");
    lines.push(
      `image ${i.key} (${i.repository})${i.pinned ? " [pinned: never refreshed]" : ""}: ${headline(i.verdict.outcome as Outcome)} (${i.verdict.reason})`,
    );
    if (i.lastAttempt) lines.push(`  last attempt: ${i.lastAttempt.told}`);
    lines.push(`  ${i.forecast}`);
    if (i.verdict.message) lines.push(`  ${i.verdict.message}`);
    lines.push(`  recorded: ${i.recordedDigest ?? "(none yet)"}`);
    if (!i.pinned)
      lines.push(`  registry: ${i.registryDigest ?? `(cannot resolve: ${i.registryError ?? "not asked"})`}`);
    lines.push(`  refresh attempts: ${i.attemptCount ?? 0}/${i.maxRefreshAttempts}${lockoutNote(i)}`);
    lines.push(`  skip streak: ${streak(i.skipStreak, i.maxSkipTicks)}`);
    lines.push(`  unresolved streak: ${streak(i.unresolvedStreak, i.maxUnresolvedTicks)}`);
    if (i.rejectedDigest) lines.push(`  rejected build: ${i.rejectedDigest}`);
    if (i.signature) lines.push(...signatureLines(i.signature));
    if (i.candidates) lines.push(...candidateLines(i.candidates));
    for (const t of i.targets) {
      const state = t.error ? `ERROR ${t.error}` : CLASSIFIED[t.classification ?? "other_repo"];
      const by = t.lastChangedBy
        ? `; image last changed by ${t.lastChangedBy.manager}${t.lastChangedBy.time ? ` at ${t.lastChangedBy.time}` : ""}`
        : t.error
          ? ""
          : "; no field manager on record";
      const blocked = t.blocked ? `; a refresh is held here: ${t.blocked}` : "";
      lines.push(`  ${t.workload} container ${t.container}: ${t.image ?? "-"} (${state}${by}${blocked})`);
    }
    lines.push(`  next: ${i.next}`);
  }
  return `${lines.join("\n")}\n`;
}

/** The policy, and the registry's build under it: "verifies with …", or why it would be refused. */
function signatureLines(s: NonNullable<ImageStatus["signature"]>): string[] {
  const lines = [`  signature policy: ${s.policy}`];
  if (s.current) lines.push(`  registry's build signature: ${s.current.status} (${s.current.reason})`);
  return lines;
}
