// The tick's front door: what the commands use of it. `tick` and `demo` run one; `status` reports
// from the tick's own observe and plan, reads an image's live containers and candidates the way a
// verdict does, and formats a soak's age; `reject` posts its Event the way apply does. The rooms
// behind it (observe, plan/, apply/) may be rearranged without a command noticing.
export { postEvent } from "./apply/state.ts";
export { baseAttrs, installation } from "./attributes.ts";
export type { TickContext } from "./context.ts";
export type { ImageVerdict, Observed, ObservedWorkload, Reason } from "./model.ts";
export { observe, observeWorkload } from "./observe.ts";
export { dueAt, parseCandidates, stamp } from "./plan/candidates.ts";
export { lastAttempt } from "./plan/last-attempt.ts";
export { type LiveContainer, liveImage, noSuchContainer } from "./plan/live.ts";
export { plan } from "./plan/plan.ts";
export { regressionSuspects } from "./plan/regression.ts";
export { ofMax } from "./plan/settle.ts";
export { age } from "./plan/soak.ts";
export { runTick, type TickResult } from "./run.ts";
export { currentSignatures, planWithSignatures, type SignatureStatus } from "./signatures.ts";
