// One image as the verdict steps judge it, built once per image and tick (verdict.ts,
// judgeImage): its configuration, its book (what the store holds of it), what the tick observed
// (its targets, the registry's answers, the clock) and the configuration. A step takes its
// judgement and this, so what it reads of the image is named once, not passed value by value.
import type { Config, ImageConfig } from "../../config.ts";
import type { ImageBook } from "../../state/book.ts";
import type { Observed } from "../model.ts";

export interface ImageCase {
  img: ImageConfig;
  b: ImageBook;
  c: Config;
  o: Observed;
}
