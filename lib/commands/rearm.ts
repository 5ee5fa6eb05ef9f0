// `image-refresh rearm [IMAGE...]`: a human's word that an image's workloads are fine. Removes the
// named images' counters, flap markers, failed digests, traceparents, repin streaks and
// rejections (the store table's `rearm` keys) in one precondition-guarded write of the store, and
// says what it removed; with no IMAGE, every image's. It does not care whether the workloads are
// settled: re-arming is exactly what a human does mid-incident.
import { UsageError } from "../cli.ts";
import type { Config } from "../config.ts";
import type { Book } from "../state/book.ts";
import { merge, rearm } from "../state/change.ts";
import { IMAGE_KEYS } from "../state/keys.ts";
import { linkStories } from "../story.ts";
import type { Attributes } from "../telemetry.ts";
import type { Runtime } from "./runtime.ts";
import { type Decided, updateStore } from "./store-update.ts";

/** An unknown IMAGE is a usage error naming the known keys (exit 2, before any request). */
export function checkImageKeys(config: Config, named: readonly string[]): void {
  const known = config.images.map((i) => i.key);
  const unknown = named.filter((k) => !known.includes(k));
  if (unknown.length)
    throw new UsageError(
      `unknown image ${unknown.join(", ")}: the config's image keys are ${known.join(", ")}`,
    );
}

/** The rearm of the named images (every image when none is named), and the line that says what it removes. */
export function rearmDecision(c: Config, book: Book, named: readonly string[]): Decided {
  const keys = named.length ? named : c.images.map((i) => i.key);
  const parts: string[] = [];
  const changes = keys.map((key) => {
    const r = rearm(book, key);
    const image = book.images[key];
    const shown = r.removed.map((f) => {
      const v = image?.[f];
      return `${IMAGE_KEYS[f].name(key)}${v && v.kind !== "absent" ? ` (was ${v.raw})` : ""}`;
    });
    if (shown.length) parts.push(`${key}: removed ${shown.join(", ")}`);
    return r.change;
  });
  return { change: merge(...changes), ...(parts.length ? { summary: parts.join("; ") } : {}) };
}

/** The rearm event: the images whose counter or flap marker it cleared, with the count each had. */
function rearmEvent(c: Config, book: Book, named: readonly string[]): Attributes {
  const keys = named.length ? named : c.images.map((i) => i.key);
  const cleared = keys.filter((k) => rearm(book, k).removed.some((f) => f === "attempt" || f === "flap"));
  const out: Attributes = { "image_refresh.images": cleared.join(",") };
  for (const k of cleared) {
    const a = book.images[k]?.attempt;
    if (a?.kind === "trusted") out[`image_refresh.attempt.${k}`] = a.value;
  }
  return out;
}

export async function rearmCommand(
  rt: Runtime,
  dryRun: boolean,
  named: readonly string[] = [],
): Promise<number> {
  checkImageKeys(rt.config, named);
  // Spelled here, not taken from the tick's front door (baseAttrs): a rearm loads none of the tick.
  const attrs: Attributes = {
    "image_refresh.installation": `${rt.store.namespace}/${rt.store.name}`,
    "image_refresh.dry_run": dryRun,
  };
  if (named.length) attrs["image_refresh.images"] = named.join(",");
  return rt.telemetry.command("image-refresh rearm", attrs, async (root) => {
    const r = await updateStore(rt, { dryRun, what: "re-arm" }, (book) =>
      rearmDecision(rt.config, book, named),
    );
    // The rearm ends the stories the stored traceparents began: link them like the ticks do.
    if (r.book) linkStories(rt.telemetry, r.book);
    const result =
      r.result === "written" ? "cleared" : r.result === "nothing" ? "nothing_to_clear" : r.result;
    root.setAttributes({ "image_refresh.rearm.result": result });
    if (r.result === "nothing")
      rt.log.info(
        "nothing to clear: no attempt counter, flap marker, failed digest, repin streak or rejection",
      );
    if (r.result === "written") {
      if (r.book) root.addEvent("rearm", rearmEvent(rt.config, r.book, named));
      rt.log.info(`re-armed: ${r.summary}; the next tick may refresh again`);
    }
    if (r.result === "failed") root.setError("rearm_failed");
    return r.result === "failed" ? 1 : 0;
  });
}
