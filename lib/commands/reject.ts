// `image-refresh reject IMAGE`: "not this build". Asks the registry for the tag's current digest,
// stores it as the image's rejected digest and re-arms the image in the same guarded PATCH: that
// build is never rolled out, and the tag's next build is eligible as usual.
import { annotationKeys } from "../annotations.ts";
import { type EventInput, postEvent } from "../kube/events.ts";
import type { Attributes } from "../telemetry.ts";
import { workloadAttributes } from "../workload.ts";
import { checkImageKeys, rearmWrites, updateState } from "./rearm.ts";
import type { Runtime } from "./runtime.ts";

export async function rejectCommand(rt: Runtime, dryRun: boolean, named: readonly string[]): Promise<number> {
  checkImageKeys(rt.config, named);
  const key = named[0] as string;
  const img = rt.config.images.find((i) => i.key === key);
  const s = rt.config.state;
  const attrs: Attributes = {
    ...workloadAttributes(s),
    "image_refresh.dry_run": dryRun,
    "image_refresh.image": key,
  };
  return rt.telemetry.command("image-refresh reject", attrs, async (root) => {
    if (!img || img.pinned) {
      rt.log.error(`cannot reject a build of ${key}: it is pinned in the config, so it is never refreshed`);
      return 1;
    }
    const tick = rt.tickContext(dryRun);
    const r = (await tick.resolve([img.repository])).get(img.repository);
    if (!r?.ok) {
      const why = r ? `${r.reason}: ${r.message}` : "not resolved";
      rt.log.error(
        `cannot reject the current build of ${img.repository}:${rt.config.tag}: the registry did not say which it is (${why})`,
      );
      root.setError("unresolved");
      return 1;
    }
    const rejected = annotationKeys(rt.config.annotationPrefix).image(key).rejected;
    let state: EventInput["regarding"] | undefined;
    const result = await updateState(
      rt,
      { dryRun, root, what: "reject", done: "rejected the build on" },
      (a, st) => {
        state = st;
        return { ...rearmWrites(rt.config, a, [key]), [rejected]: r.digest };
      },
    );
    root.setAttributes({ "image_refresh.reject.result": result, "image_refresh.digest": r.digest });
    if (result === "failed") {
      root.setError("reject_failed");
      return 1;
    }
    rt.log.info(
      `${dryRun ? "would reject" : "rejected"} ${img.repository}@${r.digest}: ${key} ${dryRun ? "would" : "will"} not roll out this build; the next build of :${rt.config.tag} rolls out as usual`,
      { image: key, digest: r.digest },
    );
    if (!dryRun && state)
      await postRejected(
        rt,
        tick.instance,
        state,
        `${img.repository}@${r.digest} rejected by a human: ${key} waits for the next build`,
      );
    return 0;
  });
}

/** The pause begins here, so its one Warning Event is posted here; failing to post is a WARNING. */
function postRejected(
  rt: Runtime,
  instance: string,
  regarding: EventInput["regarding"],
  note: string,
): Promise<void> {
  const input = {
    regarding,
    type: "Warning" as const,
    reason: "BuildRejected" as const,
    action: "Reject",
    note,
    reportingInstance: instance,
  };
  return postEvent(rt.kube, input, { namespace: rt.config.state.namespace, log: rt.log });
}
