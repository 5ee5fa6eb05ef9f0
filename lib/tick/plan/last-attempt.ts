// Which build, if any, the bookkeeping may call failed. Only a rollout seen to fail (not settled,
// failed verification, regressed) names its build in `failed-<key>-digest` and a seen-to-fail
// ending; an attempt that ended otherwise (its tick died, a write's answer was lost, the API
// refused the patch) was abandoned: it names no failed build, and the advice asks a human for
// the digest rather than guess. Pure; the lockout message, `status` and `reject` all ask here.
import type { ImageBook } from "../../state/book.ts";
import { type Attempt, seenToFail, trusted } from "../../state/values.ts";

export type LastAttempt =
  /** The last attempt's build was seen to fail (or a store from before attempts were recorded names one). */
  | { kind: "failed"; digest: string; attempt?: Attempt }
  /** The last attempt was not seen to end: no build may be called failed. */
  | { kind: "abandoned"; attempt: Attempt }
  | { kind: "none"; attempt?: Attempt };

export function lastAttempt(book: ImageBook): LastAttempt {
  const attempt = trusted(book.last);
  const failed = trusted(book.failed);
  if (attempt && attempt.ending !== "verified" && !seenToFail(attempt.ending))
    return { kind: "abandoned", attempt };
  if (failed !== undefined) return { kind: "failed", digest: failed, ...(attempt ? { attempt } : {}) };
  return { kind: "none", ...(attempt ? { attempt } : {}) };
}
