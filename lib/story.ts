// One image's story is one trace chain: each tick (and a rearm, which ends the story) links its
// root span to the ticks that wrote the images' stored attempt traceparents.
import type { Book } from "./state/book.ts";
import { parseTraceparent } from "./telemetry/traceparent.ts";
import type { Telemetry } from "./telemetry.ts";

/** Links the root span to every readable traceparent stored beside an image's attempt count. */
export function linkStories(telemetry: Pick<Telemetry, "linkRoot">, book: Book): void {
  const stories = new Set<string>();
  for (const image of Object.values(book.images)) {
    const t = image.traceparent;
    if (t.kind === "trusted" && parseTraceparent(t.value)) stories.add(t.value);
  }
  if (stories.size) telemetry.linkRoot([...stories]);
}
