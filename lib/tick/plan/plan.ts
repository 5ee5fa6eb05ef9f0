// The tick's decision: a pure function of what was observed and the configuration. No I/O, no
// clock, no environment. Each image is judged on its own (verdict.ts, the settled guard in
// settle.ts), then the verdicts are combined (combine.ts); every branch is a row in plan.test.ts,
// plan.live.test.ts, plan.soak.test.ts, plan.settle.test.ts or combine.test.ts.
import type { Config } from "../../config.ts";
import type { Decision, Observed, WorkloadRef } from "../model.ts";
import { workloadId } from "../model.ts";
import { combine } from "./combine.ts";
import { type Judgement, judgeImage } from "./verdict.ts";

export function plan(o: Observed, c: Config): Decision {
  return combine(o, c, judgeAll(o, c));
}

function judgeAll(o: Observed, c: Config): Map<string, Judgement> {
  return new Map(c.images.map((img) => [img.key, judgeImage(img, o, c)]));
}

/** The workloads to read before deciding (SPEC step 2): every target of every image that is not pinned. */
export function targetsToRead(c: Config): WorkloadRef[] {
  const refs = new Map<string, WorkloadRef>();
  for (const img of c.images) {
    if (img.pinned) continue;
    for (const t of img.targets)
      refs.set(workloadId(t), { kind: t.kind, namespace: t.namespace, name: t.name });
  }
  return [...refs.values()];
}
