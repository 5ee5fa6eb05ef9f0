// `image-refresh rearm [IMAGE...]`: a human's word that an image's workloads are fine. Removes the
// named images' counters, flap markers, traceparents and repin streaks in one precondition-guarded
// PATCH; with no IMAGE, every image's and the legacy keys. It does not care whether the state
// object is settled: re-arming is exactly what a human does mid-incident.
import { annotationKeys, counterValue, migrationWrites, readCounter } from "../annotations.ts";
import { UsageError } from "../cli.ts";
import type { Config } from "../config.ts";
import { ApiError } from "../kube/errors.ts";
import type { Workload } from "../kube/workloads.ts";
import { linkStories } from "../story.ts";
import type { Attributes, SpanHandle } from "../telemetry.ts";
import { stateRef, workloadAttributes } from "../workload.ts";
import type { Runtime } from "./runtime.ts";

const MAX_TRIES = 3;

/** What a rearm did, on its root span: the end of a lockout story is worth a dashboard row. */
type RearmResult = "cleared" | "nothing_to_clear" | "dry_run" | "failed";

/** An unknown IMAGE is a usage error naming the known keys (exit 2, before any request). */
export function checkImageKeys(config: Config, named: readonly string[]): void {
  const known = config.images.map((i) => i.key);
  const unknown = named.filter((k) => !known.includes(k));
  if (unknown.length)
    throw new UsageError(
      `unknown image ${unknown.join(", ")}: the config's image keys are ${known.join(", ")}`,
    );
}

export async function rearmCommand(
  rt: Runtime,
  dryRun: boolean,
  named: readonly string[] = [],
): Promise<number> {
  checkImageKeys(rt.config, named);
  const ref = stateRef(rt.config);
  const attrs: Attributes = {
    ...workloadAttributes(ref),
    "image_refresh.dry_run": dryRun,
  };
  if (named.length) attrs["image_refresh.images"] = named.join(",");
  return rt.telemetry.command("image-refresh rearm", attrs, async (root) => {
    const result = await updateState(rt, { dryRun, root, what: "re-arm", done: "re-armed" }, (a) =>
      rearmWrites(rt.config, a, named),
    );
    root.setAttributes({ "image_refresh.rearm.result": result });
    if (result === "failed") root.setError("rearm_failed");
    return result === "failed" ? 1 : 0;
  });
}

/**
 * The writes of a rearm: the named images' keys removed (all images' and the legacy keys when
 * none is named). With legacy keys present and only some images named, the others first take the
 * legacy count as their own (the migration every counter write makes), so they stay locked out.
 */
export function rearmWrites(
  c: Config,
  a: Record<string, string>,
  named: readonly string[],
): Record<string, string | null> {
  const keys = annotationKeys(c.annotationPrefix);
  const all = c.images.map((i) => i.key);
  const clear = named.length ? named : all;
  const out: Record<string, string | null> = {};
  const migration = migrationWrites(a, c.annotationPrefix, all);
  for (const [k, v] of Object.entries(migration)) out[k] = v;
  for (const key of clear) {
    const k = keys.image(key);
    for (const name of [k.attempt, k.flap, k.traceparent, k.repin]) {
      if (a[name] !== undefined) out[name] = null;
      else delete out[name];
    }
  }
  // Nothing legacy to migrate and nothing of the named images present: nothing to clear.
  return Object.values(out).some((v) => v === null) ? out : {};
}

interface UpdateOptions {
  dryRun: boolean;
  root: SpanHandle;
  /** The verb for messages ("re-arm", "reject") and its past ("re-armed", "rejected"). */
  what: string;
  done: string;
}

/**
 * Reads the state object, computes the writes, and sends them as one merge patch guarded by the
 * resourceVersion, re-reading on a conflict: a tick writing a count meanwhile is never overwritten.
 */
export async function updateState(
  rt: Runtime,
  opts: UpdateOptions,
  writes: (annotations: Record<string, string>, state: Workload) => Record<string, string | null>,
): Promise<RearmResult> {
  const ref = stateRef(rt.config);
  const what = `${ref.kind} ${ref.namespace}/${ref.name}`;
  for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
    try {
      const state = await rt.kube.get(ref);
      const a = state.metadata.annotations;
      const annotations = writes(a, state);
      if (Object.keys(annotations).length === 0) {
        rt.log.info(`nothing to clear on ${what}: no attempt counter, flap marker or attempt traceparent`);
        return "nothing_to_clear";
      }
      // The rearm ends the stories the stored traceparents began: link them like the ticks do.
      linkStories(rt.telemetry, rt.config, a);
      const summary = Object.entries(annotations)
        .map(([k, v]) => (v === null ? `-${k} (was ${a[k]})` : `${k}=${v}`))
        .join(" ");
      if (opts.dryRun) {
        rt.log.info(`dry run: would ${opts.what} on ${what}: ${summary}`);
        return "dry_run";
      }
      await rt.kube.mergePatch(ref, {
        metadata: { resourceVersion: state.metadata.resourceVersion, annotations },
      });
      opts.root.addEvent("rearm", cleared(rt.config, a, annotations));
      rt.log.info(`${opts.done} ${what}: ${summary}; the next tick may refresh again`);
      return "cleared";
    } catch (err) {
      if (err instanceof ApiError && err.code === 409 && attempt < MAX_TRIES) continue;
      rt.log.error(`cannot ${opts.what} on ${what}: ${(err as Error).message}`);
      return "failed";
    }
  }
  return "failed";
}

/** What was cleared, for the span event: the images and their counts where they were numbers. */
function cleared(c: Config, a: Record<string, string>, writes: Record<string, string | null>): Attributes {
  const keys = annotationKeys(c.annotationPrefix);
  const images = c.images.filter(
    (i) => writes[keys.image(i.key).attempt] === null || writes[keys.image(i.key).flap] === null,
  );
  const out: Attributes = { "image_refresh.images": images.map((i) => i.key).join(",") };
  for (const img of images) {
    const n = counterValue(readCounter(a[keys.image(img.key).attempt]));
    if (n !== undefined) out[`image_refresh.attempt.${img.key}`] = n;
  }
  return out;
}
