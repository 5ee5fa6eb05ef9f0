// Regenerates the JSON Schemas derived from the config's zod schema: `bun scripts/gen-schema.ts`
// writes k8s/config.schema.json and the Helm chart's values.schema.json (scripts/chart-schema.ts).
// tests/k8s/config-schema.test.ts and tests/chart/values-schema.test.ts fail while a shipped file
// differs from what this writes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configJsonSchemaText } from "../lib/commands/schema.ts";
import { chartValuesSchemaText } from "./chart-schema.ts";

export const SHIPPED_SCHEMA = join(import.meta.dir, "..", "k8s", "config.schema.json");
export const CHART_VALUES_SCHEMA = join(
  import.meta.dir,
  "..",
  "charts",
  "image-refresh",
  "values.schema.json",
);

if (import.meta.main) {
  writeFileSync(SHIPPED_SCHEMA, configJsonSchemaText());
  writeFileSync(CHART_VALUES_SCHEMA, chartValuesSchemaText());
  process.stderr.write(`wrote ${SHIPPED_SCHEMA}\nwrote ${CHART_VALUES_SCHEMA}\n`);
}
