// The floor: a compiled Bun program that writes one line and exits. Whatever `version` costs
// above this is the product's own start-up, not the runtime's.
import { writeSync } from "node:fs";

writeSync(1, "floor\n");
