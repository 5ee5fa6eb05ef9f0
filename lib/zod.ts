// zod/mini, evaluated on first use. A tick's boundaries are checked by the functions compiled
// from their schemas (lib/checks/), so a tick whose inputs are valid never builds a schema; with
// zod imported statically it would still evaluate zod and its English messages at start-up
// (about 1 ms of CPU before the first request). `require` inside a function keeps that module
// out of start-up: the bundle evaluates it on the first call.
import type * as Z from "zod/mini";
import type en from "zod/v4/locales/en.js";

let loaded: typeof Z | undefined;

export function zod(): typeof Z {
  if (loaded) return loaded;
  const z = require("zod/mini") as typeof Z;
  // zod/mini ships without messages (for size); English only, since operators read them.
  const english = (require("zod/v4/locales/en.js") as { default: typeof en }).default;
  z.config(english());
  loaded = z;
  return z;
}
