// One image as the verdict steps judge it, built once per image and tick (verdict.ts,
// judgeImage): its configuration, its book (what the store holds of it), what the tick observed
// (its targets, the registry's answers, the clock) and the configuration. A step takes its
// judgement and this, so what it reads of the image is named once, not passed value by value.
import type { Config, ImageConfig } from "../../config.ts";
import type { ImageBook } from "../../state/book.ts";
import type { Observed } from "../model.ts";
import type { LiveImage } from "./live.ts";

export interface ImageCase {
  img: ImageConfig;
  b: ImageBook;
  c: Config;
  o: Observed;
}

/**
 * The case as the attempt rules (due.ts) read it: the build a refresh would roll out, the image's
 * live targets, and for a re-pin to the recorded build what it re-pins.
 */
export interface DueInput extends ImageCase {
  digest: string;
  live?: LiveImage;
  /** A re-pin to the recorded digest rather than a new build. */
  repin?: { only: string[]; managers: string[]; what: string; adoption?: boolean };
}
