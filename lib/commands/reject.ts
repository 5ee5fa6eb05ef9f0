// `image-refresh reject IMAGE [DIGEST]`: "not this build". The digest is DIGEST when given (any
// build, a soaking candidate included), else the image's failed build when it has one, else the
// tag's current digest (asked of the registry). When the last attempt was abandoned (no build
// seen to fail), it asks for the DIGEST instead of guessing (exit 2). It is stored as the image's rejected digest and
// the image is re-armed in the same guarded write: that build never rolls out, the next is eligible.
import type { Workload } from "../kube/workloads.ts";
import { EXIT_USAGE } from "../outcomes.ts";
import { imageBook } from "../state/book.ts";
import { reject } from "../state/change.ts";
import type { Attributes } from "../telemetry.ts";
import { baseAttrs, lastAttempt, postEvent } from "../tick/index.ts";
import { distinctTargets, workloadId } from "../workload.ts";
import { checkImageKeys } from "./rearm.ts";
import type { Runtime } from "./runtime.ts";
import { updateStore } from "./store-update.ts";

export async function rejectCommand(
  rt: Runtime,
  dryRun: boolean,
  named: readonly string[],
  digest?: string,
): Promise<number> {
  checkImageKeys(rt.config, named);
  const key = named[0] as string;
  const img = rt.config.images.find((i) => i.key === key);
  const attrs: Attributes = {
    ...baseAttrs({ ctx: rt }),
    "image_refresh.dry_run": dryRun,
    "image_refresh.image": key,
  };
  return rt.telemetry.command("image-refresh reject", attrs, async (root) => {
    if (!img || img.pinned) {
      rt.log.error(`cannot reject a build of ${key}: it is pinned in the config, so it is never refreshed`);
      return 1;
    }
    const tick = rt.tickContext(dryRun);
    let chosen = digest;
    let abandoned: string | undefined;
    const r = await updateStore(rt, { dryRun, what: "reject" }, (book) => {
      const last = lastAttempt(book.images[key] ?? imageBook(() => undefined));
      abandoned = digest === undefined && last.kind === "abandoned" ? last.attempt.digest : undefined;
      if (abandoned) return { change: {} };
      chosen = digest ?? (last.kind === "failed" ? last.digest : undefined) ?? chosen;
      if (chosen === undefined) return { change: {} };
      return { change: reject(book, key, chosen), summary: `${key}: rejected ${chosen}` };
    });
    if (abandoned !== undefined) return askForDigest(rt, key, abandoned);
    if (r.result === "nothing") {
      // No DIGEST and no failed build: the tag's current one, from the registry.
      const current = (await tick.resolve([img])).digests.get(img.key);
      if (!current?.ok) {
        const why = current ? `${current.reason}: ${current.message}` : "not resolved";
        rt.log.error(
          `cannot reject the current build of ${img.repository}:${img.tag}: the registry did not say which it is (${why})`,
        );
        root.setError("unresolved");
        return 1;
      }
      return rejectCommand(rt, dryRun, named, current.digest);
    }
    root.setAttributes({
      "image_refresh.reject.result": r.result,
      ...(chosen ? { "image_refresh.digest": chosen } : {}),
    });
    if (r.result === "failed") {
      root.setError("reject_failed");
      return 1;
    }
    const note = `${img.repository}@${chosen} ${dryRun ? "would be rejected" : "rejected"} by a human: ${key} ${dryRun ? "would" : "will"} not roll out this build; the next build of :${img.tag} rolls out as usual`;
    rt.log.info(
      dryRun
        ? `would reject ${img.repository}@${chosen}: ${key} would not roll out this build; the next build of :${img.tag} rolls out as usual`
        : note,
      { image: key, digest: chosen },
    );
    if (r.result === "written" && !dryRun) await announce(rt, tick, note, img);
    return 0;
  });
}

/**
 * The last attempt was abandoned: nobody saw its build fail, so no build is the obvious one to
 * reject. Guessing could reject a healthy build; the human names it (a usage matter: exit 2).
 */
function askForDigest(rt: Runtime, key: string, tried: string): number {
  rt.log.error(
    `cannot tell which build of ${key} to reject: its last attempt (build ${tried}) was abandoned before anyone saw how it ended, so no build is known to have failed; check its workloads (\`image-refresh status ${key}\`), then run \`image-refresh reject ${key} DIGEST\` naming the bad build, or \`image-refresh rearm ${key}\` to try again`,
    { image: key, digest: tried },
  );
  return EXIT_USAGE;
}

/** The pause begins here, so its one Warning Event is posted here, about the image's targets. */
async function announce(
  rt: Runtime,
  tick: ReturnType<Runtime["tickContext"]>,
  note: string,
  img: NonNullable<Runtime["config"]["images"][number]>,
): Promise<void> {
  const refs = distinctTargets({ images: [img] });
  const objects = new Map<string, Workload>();
  await Promise.all(
    refs.map(async (ref) => {
      const w = await rt.kube.get(ref).catch(() => undefined);
      if (w) objects.set(workloadId(ref), w);
    }),
  );
  await postEvent(
    { ctx: tick, obs: { objects } },
    { eventType: "Warning", reason: "BuildRejected", note },
    refs,
  );
}
