// `image-refresh rearm`: a human's word that the workloads are fine. Removes the attempt counter,
// the flap marker and the attempt traceparent in one precondition-guarded PATCH. It does not care
// whether the state object is settled: re-arming is exactly what a human does mid-incident.
import { annotationKeys } from "../annotations.ts";
import { ApiError } from "../kube/errors.ts";
import { stateRef } from "../tick/observe.ts";
import type { Runtime } from "./runtime.ts";

const MAX_TRIES = 3;

export async function rearmCommand(rt: Runtime, dryRun: boolean): Promise<number> {
  const keys = annotationKeys(rt.config.annotationPrefix);
  const ref = stateRef(rt.config);
  const what = `${ref.kind} ${ref.namespace}/${ref.name}`;
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    try {
      const state = await rt.kube.get(ref);
      const a = state.metadata.annotations;
      const present = [keys.attempt, keys.flap, keys.traceparent].filter((k) => a[k] !== undefined);
      if (present.length === 0) {
        rt.log.info(`nothing to clear on ${what}: no attempt counter, flap marker or attempt traceparent`);
        return 0;
      }
      const summary = present.map((k) => `${k}=${a[k]}`).join(" ");
      if (dryRun) {
        rt.log.info(`dry run: would remove ${summary} from ${what}`);
        return 0;
      }
      const annotations = Object.fromEntries(present.map((k) => [k, null]));
      await rt.kube.mergePatch(ref, {
        metadata: { resourceVersion: state.metadata.resourceVersion, annotations },
      });
      rt.log.info(`re-armed ${what}: removed ${summary}; the next tick may refresh again`);
      return 0;
    } catch (err) {
      if (err instanceof ApiError && err.code === 409 && attempt < MAX_TRIES) continue;
      rt.log.error(`cannot re-arm ${what}: ${(err as Error).message}`);
      return 1;
    }
  }
  return 1;
}
