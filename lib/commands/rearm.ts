// `image-refresh rearm`: a human's word that the workloads are fine. Removes the attempt counter,
// the flap marker and the attempt traceparent in one precondition-guarded PATCH. It does not care
// whether the state object is settled: re-arming is exactly what a human does mid-incident.
import { annotationKeys, readCounter } from "../annotations.ts";
import { ApiError } from "../kube/errors.ts";
import { nameAttribute } from "../kube/objects.ts";
import type { Attributes, SpanHandle } from "../telemetry.ts";
import { stateRef } from "../tick/observe.ts";
import type { Runtime } from "./runtime.ts";

const MAX_TRIES = 3;

/** What a rearm did, on its root span: the end of a lockout story is worth a dashboard row. */
type RearmResult = "cleared" | "nothing_to_clear" | "dry_run" | "failed";

export async function rearmCommand(rt: Runtime, dryRun: boolean): Promise<number> {
  const ref = stateRef(rt.config);
  const attrs: Attributes = {
    "k8s.namespace.name": ref.namespace,
    [nameAttribute(ref.kind)]: ref.name,
    "image_refresh.dry_run": dryRun,
  };
  return rt.telemetry.command("image-refresh rearm", attrs, async (root) => {
    const result = await rearm(rt, dryRun, root);
    root.setAttributes({ "image_refresh.rearm.result": result });
    if (result === "failed") root.setError("rearm_failed");
    return result === "failed" ? 1 : 0;
  });
}

async function rearm(rt: Runtime, dryRun: boolean, root: SpanHandle): Promise<RearmResult> {
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
        return "nothing_to_clear";
      }
      // The rearm ends the story the stored traceparent began: link it like the ticks do.
      const story = a[keys.traceparent];
      if (story !== undefined) rt.telemetry.linkRoot([story]);
      const summary = present.map((k) => `${k}=${a[k]}`).join(" ");
      if (dryRun) {
        rt.log.info(`dry run: would remove ${summary} from ${what}`);
        return "dry_run";
      }
      const annotations = Object.fromEntries(present.map((k) => [k, null]));
      await rt.kube.mergePatch(ref, {
        metadata: { resourceVersion: state.metadata.resourceVersion, annotations },
      });
      root.addEvent("rearm", cleared(a[keys.attempt], a[keys.flap]));
      rt.log.info(`re-armed ${what}: removed ${summary}; the next tick may refresh again`);
      return "cleared";
    } catch (err) {
      if (err instanceof ApiError && err.code === 409 && attempt < MAX_TRIES) continue;
      rt.log.error(`cannot re-arm ${what}: ${(err as Error).message}`);
      return "failed";
    }
  }
  return "failed";
}

/** The count as a number when it is one, the flap marker as written; absent ones are left out. */
function cleared(attempt: string | undefined, flap: string | undefined): Attributes {
  const out: Attributes = {};
  const count = readCounter(attempt);
  if (count.kind === "trusted") out["image_refresh.attempt"] = count.value;
  if (flap !== undefined) out["image_refresh.flap_detected"] = flap;
  return out;
}
