// A workload patch the API server refused before anything of the group changed (403, 404, 422,
// or the guard's failed `test`): not an attempt of the build. The image is held with the API's
// reason, the count this tick took for it is given back in the same tick, and nothing counts
// toward a lockout. If the count cannot be given back, the message says it stayed.
import type { ApiError } from "../../kube/errors.ts";
import { explainRefusal } from "../../kube/refusal.ts";
import type { ImageVerdict, Rollout } from "../model.ts";
import { describeWorkload } from "../model.ts";
import { endAttempts } from "./ending.ts";
import { failImage, type Run } from "./state.ts";

export async function refused(run: Run, a: Rollout, err: ApiError): Promise<void> {
  const keys = run.groups[a.group] ?? a.images;
  const why = `${describeWorkload(a.workload)} was not patched: ${explainRefusal(err, a.workload.namespace)}`;
  // Later rollouts of the group are not started: its images move together.
  run.failed.set(a.group, { outcome: "held", reason: "patch_refused", message: why });
  const ended = await endAttempts(run, keys, "refused", { giveBack: true });
  for (const key of keys) {
    const own = a.images.includes(key) ? why : `${key} moves with ${a.images.join(", ")}: ${why}`;
    const mine = run.attempts[key];
    const back = ended.written.includes(key);
    const count = mine ? (back ? mine.count - 1 : mine.count) : undefined;
    const counted = !mine
      ? ""
      : back
        ? `; not an attempt of build ${mine.digest}: the attempt count is back at ${count}`
        : `; not an attempt of build ${mine.digest}, but the attempt count stayed at ${mine.count} (${ended.error ?? "another tick wrote it since"})`;
    failImage(run, key, { outcome: "held", reason: "patch_refused", message: `${own}${counted}` });
    const v = run.verdicts.get(key) as ImageVerdict;
    v.short = "(patch refused)";
    // The workloads were not touched: they run what they ran, as the observation found them.
    v.inSync = undefined;
    if (count !== undefined) {
      v.attemptCount = count;
      v.lockedOut = count >= run.ctx.config.maxRefreshAttempts;
    }
  }
}
