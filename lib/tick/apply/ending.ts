// How this tick's attempts ended, written to the store as soon as it is known. The attempt
// write before the rollouts says `started`; a rollout seen to fail writes `failed-<key>-digest`
// (and the flap marker when that failure reaches maxRefreshAttempts, so the lockout is
// announced on this tick); a patch the API refused before anything changed gives the count
// back. Each is a compare-and-swap decided on the store as it is now: an attempt another tick
// wrote since this one's belongs to that tick, and is left alone.
import { type Change, merge, setField } from "../../state/change.ts";
import { IMAGE_KEYS } from "../../state/keys.ts";
import { countOf, type Ending, rawOf } from "../../state/values.ts";
import { describeStore, type Run, tickClock, withRetry } from "./state.ts";

export interface EndOptions {
  /** The build was seen to fail: `failed-<key>-digest` names it, the flap marker at the maximum. */
  failed?: boolean;
  /** Not an attempt of the build after all: the count goes back to what it was before this tick. */
  giveBack?: boolean;
}

export interface Ended {
  /** The images whose ending was written. */
  written: string[];
  /** The images whose flap marker was written with it (the lockout is announced now). */
  locked: string[];
  /** Why the write did not land (then nothing was written). */
  error?: string;
}

/** Writes how the attempts of `keys` ended; a failed write is reported, never thrown. */
export async function endAttempts(
  run: Run,
  keys: readonly string[],
  ending: Ending,
  opts: EndOptions = {},
): Promise<Ended> {
  const ours = keys.filter((k) => run.attempts[k] !== undefined);
  let out: Ended = { written: [], locked: [] };
  const decide = (): Change => {
    out = { written: [], locked: [] };
    const changes = ours.filter((k) => stillOurs(run, k)).map((k) => endingChange(run, k, ending, opts, out));
    return merge(...changes);
  };
  if (ours.length === 0) return out;
  try {
    await withRetry(run, decide);
  } catch (err) {
    const error = (err as Error).message;
    run.ctx.log.warn(
      `cannot write how the attempt of ${ours.join(", ")} ended (${ending}) to ${describeStore(run)}`,
      {
        error,
      },
    );
    return { written: [], locked: [], error };
  }
  return out;
}

/** The store still holds this tick's count (a dry run wrote none, so it is taken as held). */
function stillOurs(run: Run, key: string): boolean {
  const current = run.book.images[key]?.attempt;
  if (run.ctx.dryRun || !current) return true;
  return countOf(current) === run.attempts[key]?.count;
}

function endingChange(run: Run, key: string, ending: Ending, opts: EndOptions, out: Ended): Change {
  const a = run.attempts[key] as { count: number; digest: string };
  out.written.push(key);
  const last = setField(key, "last", { digest: a.digest, ending, at: tickClock(run) });
  if (opts.giveBack) {
    // Everything the attempt write set for the image goes back as it was, the re-pin's streak
    // too: a re-pin that never happened must not make the next re-render look contested.
    const before = run.read.judged.images[key];
    return merge(last, {
      [IMAGE_KEYS.attempt.name(key)]: a.count > 1 ? String(a.count - 1) : null,
      [IMAGE_KEYS.traceparent.name(key)]: (before && rawOf(before.traceparent)) ?? null,
      [IMAGE_KEYS.repin.name(key)]: (before && rawOf(before.repin)) ?? null,
    });
  }
  if (!opts.failed) return last;
  const failed = setField(key, "failed", a.digest);
  if (a.count < run.ctx.config.maxRefreshAttempts) return merge(last, failed);
  out.locked.push(key);
  if (run.book.images[key]?.flap.kind !== "absent") return merge(last, failed);
  return merge(last, failed, { [IMAGE_KEYS.flap.name(key)]: String(a.count) });
}
