// The tick's decision: a pure function of what was observed and the configuration. No I/O, no
// clock, no environment. Each image is judged on its own (verdict.ts, the settled guard in
// settle.ts), then the verdicts are combined (combine.ts); every branch is a row in plan.test.ts
// (the settled guard's too), plan.live.test.ts, plan.soak.test.ts, plan.events.test.ts or combine.test.ts.
import type { Config } from "../../config.ts";
import type { Decision, Observed } from "../model.ts";
import { combine } from "./combine.ts";
import { type Judgement, judgeImage } from "./verdict.ts";

export function plan(observed: Observed, config: Config): Decision {
  const judged = judgeAll(observed, config);
  return combine(observed, config, judged);
}

function judgeAll(observed: Observed, config: Config): Map<string, Judgement> {
  return new Map(config.images.map((img) => [img.key, judgeImage(img, observed, config)]));
}
