// What every metric of a tick, and of the commands beside it, carries: the installation (the
// store's `<namespace>/<name>`, so two installations in one cluster are never added up) and, per
// image, its key and repository. Apply's steps and the tick's report use it alike, so it sits
// beside the context they share rather than inside either.
import type { TickContext } from "./context.ts";

/** The installation, `<store namespace>/<store name>`: every metric carries it. */
export const installation = (ctx: Pick<TickContext, "store">) => `${ctx.store.namespace}/${ctx.store.name}`;

/** Per-image metric attributes; the installation's alone when no image is named. */
export function baseAttrs(
  run: { ctx: Pick<TickContext, "store" | "config"> },
  image?: string,
): Record<string, string> {
  const attrs: Record<string, string> = { "image_refresh.installation": installation(run.ctx) };
  if (image === undefined) return attrs;
  const repo = run.ctx.config.images.find((i) => i.key === image)?.repository ?? image;
  return { ...attrs, "image_refresh.image": image, "container.image.name": repo };
}
