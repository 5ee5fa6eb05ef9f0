// What the on-call does next for an image, by the reason of its verdict: one row per reason, so
// the compiler flags a reason added without its next step.
import type { Config } from "../config.ts";
import type { ImageVerdict, Reason } from "../tick/index.ts";

interface Ask {
  key: string;
  v: ImageVerdict;
  c: Config;
}

const NOTHING = "nothing to do";

const NEXT_STEP: Record<Reason, (a: Ask) => string> = {
  unchanged: () => NOTHING,
  pinned: () => NOTHING,
  first_observation: () => "nothing: the next tick records it",
  digest_changed: () => "nothing: the next tick rolls it out",
  not_settled: () => "wait for the workload to settle (kubectl rollout status)",
  skip_ceiling: () => "find out why the workload does not settle (kubectl rollout status, kubectl describe)",
  skip_streak_untrusted: ({ key }) => `remove skip-streak-${key} from the store (kubectl edit configmap)`,
  // The verdict's sentence tells the failed build from a newer one and gives the right command.
  flap_lockout: ({ v }) => v.message.slice(v.message.indexOf("check its workloads")),
  attempt_untrusted: ({ key }) => `check the workloads, then \`image-refresh rearm ${key}\``,
  target_unavailable: () => "make the target workload readable and rollable, or fix its entry in the config",
  target_mismatch: () =>
    "fix images[].targets[].container (or the repository) in the config: that container runs another image",
  shared_workload: () => `deal with the image it waits for (\`image-refresh status\`)`,
  unresolved: () => "check the repository and tag, the registry's CA and the pull secret",
  unresolved_ceiling: () => "check the repository and tag, the registry's CA and the pull secret",
  unresolved_streak_untrusted: ({ key }) =>
    `remove unresolved-streak-${key} from the store (kubectl edit configmap)`,
  build_rejected: ({ key, c }) =>
    `nothing: the next build of :${c.images.find((i) => i.key === key)?.tag ?? c.tag} rolls out (to allow this one again: \`image-refresh rearm ${key}\`)`,
  pinned_by_human: ({ v }) =>
    `when the pin is no longer needed, set the container back to the tag: ${v.resume ?? "kubectl set image"}`,
  tag_rerendered: () =>
    "pin the digest in the deploy tool's source, or set `reconcile: repin` to let image-refresh re-pin it",
  pin_restored: () => "nothing: the next tick re-pins the containers that name the floating tag",
  pin_contested: ({ key }) =>
    `make the tool that keeps rendering the tag leave the image field alone (see above), then \`image-refresh rearm ${key}\``,
  minimum_age: () =>
    "nothing: the first tick after it is due rolls it out (minimumAge: 0s on a canary cluster takes builds at once)",
  // The publisher acts, not the on-call: the verdict's sentence names the keys and the check.
  unsigned: ({ key }) =>
    `have the build's publisher sign it with a key of the policy (cosign sign --key ...), or \`image-refresh reject ${key}\` to wait for the next build`,
  signature_invalid: ({ key }) =>
    `have the build's publisher sign this digest with a key of the policy (cosign verify --key ... says what is wrong), or \`image-refresh reject ${key}\` to wait for the next build`,
  signature_unreadable: () =>
    "check that the registry serves the signature (the log says what it answered); the next tick asks again",
  signature_unchecked: () =>
    "run status where the policy's keys are (the CronJob's pod), or give them the same paths here",
  streak_not_counted: () => NOTHING,
  attempt_not_persisted: () => NOTHING,
  attempt_claimed: () => NOTHING,
  // The verdict's sentence says what the API server refused and what to grant or fix.
  patch_refused: () => "fix what the API server refused (above); the next tick tries again, uncounted",
  flap_marker_not_written: () => NOTHING,
  rollout_failed: () => NOTHING,
  rollout_failed_reverted: () => NOTHING,
  revert_failed: () => NOTHING,
  regressed: ({ key }) =>
    `nothing: the next tick rolls out the registry's build (a newer one, or the regressed one again, counted); \`image-refresh reject ${key}\` keeps the regressed build out`,
  reset_failed: () => NOTHING,
  record_failed: () => NOTHING,
  store_unreadable: () => NOTHING,
  stopped: () => NOTHING,
  unexpected: () => NOTHING,
};

export function nextStep(key: string, v: ImageVerdict | undefined, c: Config): string {
  if (!v) return NOTHING;
  // In sync but locked out: the next build will be held, so say now how to re-arm.
  if (v.lockedOut && v.reason === "unchanged")
    return `locked out: check the workloads, then \`image-refresh rearm ${key}\` before the next build arrives`;
  return NEXT_STEP[v.reason]({ key, v, c });
}
