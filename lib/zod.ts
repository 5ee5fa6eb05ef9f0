// zod/mini, evaluated on first use. A tick's boundaries are checked by the functions compiled
// from their schemas (lib/checks/), so a tick whose inputs are valid never builds a schema; with
// zod imported statically it would still load and evaluate zod and its English messages at
// start-up. `require` inside a function keeps them out of it: the bundle puts lib/zod-parts.ts
// (only the parts the schemas use) in a chunk of its own, loaded on the first call.
import type * as Parts from "./zod-parts.ts";

export type Zod = typeof Parts;
let loaded: Zod | undefined;

export function zod(): Zod {
  if (loaded) return loaded;
  const z = require("./zod-parts.ts") as Zod;
  // zod/mini ships without messages (for size); English only, since operators read them.
  z.config(z.en());
  loaded = z;
  return z;
}
