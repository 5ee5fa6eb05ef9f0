// One image's story is one trace chain: each tick (and a rearm, which ends the story) links its
// root span to the ticks that wrote the images' stored attempt traceparents.
import { imageCounters } from "./annotations.ts";
import { parseTraceparent, type Telemetry } from "./telemetry.ts";

/** Links the root span to every readable traceparent stored beside an image's attempt count. */
export function linkStories(
  telemetry: Pick<Telemetry, "linkRoot">,
  config: { annotationPrefix: string; images: ReadonlyArray<{ key: string }> },
  annotations: Record<string, string>,
): void {
  const stories = new Set<string>();
  for (const img of config.images) {
    const stored = imageCounters(annotations, config.annotationPrefix, img.key).traceparent;
    if (stored !== undefined && parseTraceparent(stored)) stories.add(stored);
  }
  if (stories.size) telemetry.linkRoot([...stories]);
}
