// Regenerates k8s/config.schema.json from the config's zod schema: `bun scripts/gen-schema.ts`.
// tests/k8s/config-schema.test.ts fails while the shipped file differs from what this writes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configJsonSchemaText } from "../lib/commands/schema.ts";

export const SHIPPED_SCHEMA = join(import.meta.dir, "..", "k8s", "config.schema.json");

if (import.meta.main) {
  writeFileSync(SHIPPED_SCHEMA, configJsonSchemaText());
  process.stderr.write(`wrote ${SHIPPED_SCHEMA}\n`);
}
