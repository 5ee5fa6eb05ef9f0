// `image-refresh schema`: the config's JSON Schema (draft 2020-12), generated from the same
// zod/mini schema that validates the file, so an editor's check and the product's never drift.
// k8s/config.schema.json is this output (scripts/gen-schema.ts writes it; a test keeps it fresh).

import { configSchema } from "../config.ts";
import { writeStdout } from "../output.ts";
import { zod } from "../zod.ts";

/** The JSON Schema of the config file as a user writes it (durations as text, defaults shown). */
export function configJsonSchema(): Record<string, unknown> {
  // io "input": the file's side of the transforms (a duration is the text "10m", not 600000).
  const generated = zod().toJSONSchema(configSchema(), { io: "input", target: "draft-2020-12" });
  const { $schema, ...rest } = generated as Record<string, unknown>;
  return {
    $schema,
    title: "image-refresh configuration",
    description:
      "The image-refresh configuration file (config.yaml). Rules across fields (unique keys, one image per container, a key derived from the repository, plain-http endpoints needing insecure) are checked by `image-refresh validate`, not by this schema.",
    ...rest,
  };
}

/** The text both the command and the shipped file hold: two-space JSON and a final newline. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

export function schemaCommand(): number {
  writeStdout(configJsonSchemaText());
  return 0;
}
