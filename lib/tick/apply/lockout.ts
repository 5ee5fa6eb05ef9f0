// The lockout announced on the tick that reaches it: when a rollout seen to fail brings an
// image's count to maxRefreshAttempts, the flap marker rode with the failure's write
// (ending.ts); here the image's verdict becomes `locked_out` (so the tick's outcome, span event
// and lockout counter say so now, not one tick later) and its Event goes out.

import type { ImageVerdict } from "../model.ts";
import { lockoutAdvice } from "../plan/due.ts";
import { postEvent, type Run, targetsOfImages } from "./state.ts";

export async function announceLockouts(run: Run, keys: readonly string[]): Promise<void> {
  const max = run.ctx.config.maxRefreshAttempts;
  for (const key of keys) {
    const a = run.attempts[key];
    const v = run.verdicts.get(key) as ImageVerdict;
    if (!a) continue;
    const advice = lockoutAdvice(key, { count: a.count, max, failed: a.digest, now: a.digest });
    const message = `${v.message}; ${advice}`;
    Object.assign(v, { outcome: "locked_out", reason: "flap_lockout", message, short: `${a.count}/${max}` });
    v.attemptCount = a.count;
    v.lockedOut = true;
    const event = {
      eventType: "Warning" as const,
      reason: "RefreshLockedOut" as const,
      note: message,
      image: key,
    };
    await postEvent(run, event, targetsOfImages(run, [key]));
  }
}
