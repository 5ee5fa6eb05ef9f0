// `image-refresh reject IMAGE [DIGEST]`: "not this build". The digest is DIGEST when given (any
// build, a soaking candidate included), else the image's failed build when it has one, else the
// tag's current digest (asked of the registry). When the last attempt was abandoned (no build
// seen to fail), it asks for the DIGEST instead of guessing (exit 2). It is stored as the image's rejected digest and
// the image is re-armed in the same guarded write: that build never rolls out, the next is eligible.
import { containerImages } from "../kube/objects.ts";
import type { Workload } from "../kube/workloads.ts";
import { EXIT_USAGE } from "../outcomes.ts";
import { parseImageRef } from "../registry/image-ref.ts";
import { imageBook } from "../state/book.ts";
import { reject } from "../state/change.ts";
import { trusted } from "../state/values.ts";
import type { Attributes } from "../telemetry.ts";
import { baseAttrs, lastAttempt, postEvent } from "../tick/index.ts";
import { describeWorkload, distinctTargets, workloadId } from "../workload.ts";
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
    let previous: string | undefined;
    const r = await updateStore(rt, { dryRun, what: "reject" }, (book) => {
      const last = lastAttempt(book.images[key] ?? imageBook(() => undefined));
      previous = trusted(book.images[key]?.previous ?? { kind: "absent" });
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
    const objects = await readTargets(rt, img);
    const running = runningOn(img, objects, chosen as string);
    const back = running.length === 0 ? "" : rollbackNote(running, chosen as string, previous, dryRun);
    const note = `${img.repository}@${chosen} ${dryRun ? "would be rejected" : "rejected"} by a human: ${key} ${dryRun ? "would" : "will"} not roll out this build; the next build of :${img.tag} rolls out as usual${back}`;
    rt.log.info(
      dryRun
        ? `would reject ${img.repository}@${chosen}: ${key} would not roll out this build; the next build of :${img.tag} rolls out as usual${back}`
        : note,
      { image: key, digest: chosen },
    );
    if (r.result === "written" && !dryRun) await announce(tick, note, img, objects);
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

type Image = NonNullable<Runtime["config"]["images"][number]>;

/** The image's targets as they are now (a target that cannot be read is left out). */
async function readTargets(rt: Runtime, img: Image): Promise<Map<string, Workload>> {
  const objects = new Map<string, Workload>();
  await Promise.all(
    distinctTargets({ images: [img] }).map(async (ref) => {
      const w = await rt.kube.get(ref).catch(() => undefined);
      if (w) objects.set(workloadId(ref), w);
    }),
  );
  return objects;
}

/** The targets whose configured container runs `digest`, as `Deployment apps/api`. */
function runningOn(img: Image, objects: Map<string, Workload>, digest: string): string[] {
  const out = new Set<string>();
  for (const t of img.targets) {
    const w = objects.get(workloadId(t));
    const image = w ? containerImages(w).get(t.container)?.image : undefined;
    if (image && parseImageRef(image)?.digest === digest) out.add(describeWorkload(t));
  }
  return [...out];
}

/** A rejected build that runs: where, and what the next tick does about it (or a human must). */
function rollbackNote(
  running: string[],
  digest: string,
  previous: string | undefined,
  dryRun: boolean,
): string {
  const where = `; ${digest} ${dryRun ? "would still be" : "is"} running on ${running.join(", ")}`;
  if (previous !== undefined && previous !== digest)
    return `${where}: the next tick rolls ${running.length === 1 ? "it" : "them"} back to ${previous}`;
  return `${where}, and no earlier build is recorded to go back to: put ${running.length === 1 ? "it" : "them"} back by hand (kubectl rollout undo, or kubectl set image to a good build)`;
}

/** The pause begins here, so its one Warning Event is posted here, about the image's targets. */
async function announce(
  tick: ReturnType<Runtime["tickContext"]>,
  note: string,
  img: Image,
  objects: Map<string, Workload>,
): Promise<void> {
  await postEvent(
    { ctx: tick, read: { objects } },
    { eventType: "Warning", reason: "BuildRejected", note },
    distinctTargets({ images: [img] }),
  );
}
