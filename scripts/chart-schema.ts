// The Helm chart's values.schema.json, generated: `config` is the product's own config schema
// (lib/config.ts, the one source of truth), the chart's other values are declared here once.
// Helm compiles the schema with Go's regexp (RE2), which has no lookaround, so each lookaround
// the config's patterns use is rewritten into its exact JSON Schema equivalent; a pattern with
// any other lookaround stops the generator instead of shipping a schema Helm cannot compile.
import * as z from "zod/mini";
import { configJsonSchema } from "../lib/commands/schema.ts";

const text = z.string();
const optionalText = z.optional(z.string());

/** The chart's own values, beside `config`. Defaults live in values.yaml, not here. */
const chartValues = z.strictObject({
  // Helm hands every chart a `global` section when it is used as a subchart.
  global: z.optional(z.record(z.string(), z.unknown())),
  nameOverride: optionalText,
  fullnameOverride: optionalText,
  image: z.strictObject({
    repository: text.check(z.minLength(1)),
    tag: optionalText,
    pullPolicy: z.optional(z.enum(["Always", "IfNotPresent", "Never"])),
  }),
  imagePullSecrets: z.optional(z.array(z.strictObject({ name: text }))),
  schedule: text.check(z.minLength(1)),
  suspend: z.optional(z.boolean()),
  activeDeadlineSeconds: z.optional(z.nullable(z.int().check(z.gte(1)))),
  pullSecretName: text.check(z.minLength(1)),
  verifyKeys: z.optional(z.strictObject({ configMapName: optionalText, secretName: optionalText })),
  logFormat: z.optional(z.enum(["text", "json"])),
  telemetry: z.optional(
    z.strictObject({
      otlpEndpoint: optionalText,
      otlpProtocol: z.optional(z.enum(["http/protobuf", "http/json"])),
      serviceName: optionalText,
      // A fleet's clusters told apart: `cluster=<name>` first in OTEL_RESOURCE_ATTRIBUTES.
      cluster: optionalText,
      resourceAttributes: z.optional(z.record(z.string().check(z.minLength(1)), z.string())),
    }),
  ),
  monitoring: z.optional(
    z.strictObject({
      // The one switch; each part's own `enabled`, when set, overrides it for that part.
      enabled: z.optional(z.boolean()),
      prometheusRule: z.optional(
        z.strictObject({
          enabled: z.optional(z.boolean()),
          labels: z.optional(z.record(z.string(), z.string())),
        }),
      ),
      dashboards: z.optional(
        z.strictObject({
          enabled: z.optional(z.boolean()),
          // The label Grafana's dashboard sidecar watches (its `label` and `labelValue` settings).
          label: z.optional(z.string().check(z.minLength(1))),
          labelValue: optionalText,
          namespace: optionalText,
          annotations: z.optional(z.record(z.string(), z.string())),
        }),
      ),
      runbookUrl: optionalText,
    }),
  ),
  resources: z.optional(z.record(z.string(), z.unknown())),
  podLabels: z.optional(z.record(z.string(), z.string())),
  podAnnotations: z.optional(z.record(z.string(), z.string())),
  serviceAccount: z.optional(z.strictObject({ annotations: z.optional(z.record(z.string(), z.string())) })),
  nodeSelector: z.optional(z.record(z.string(), z.string())),
  tolerations: z.optional(z.array(z.record(z.string(), z.unknown()))),
  affinity: z.optional(z.record(z.string(), z.unknown())),
});

type Json = Record<string, unknown>;

/** `^(?=.)` is "not empty"; `(?![0dhms]+$)` after `^` is "not only zeros"; `m(?!s)` only steers capture groups. */
const LOOKAROUNDS: Array<{ find: string; add?: Json }> = [
  { find: "(?=.)", add: { minLength: 1 } },
  // The rest of the pattern admits only digits and d, h, m, s: "not only 0, d, h, m and s" is "has a
  // digit 1-9", which Helm reports as a pattern the value does not match (a `not` only says failed).
  { find: "(?![0dhms]+$)", add: { allOf: [{ pattern: "[1-9]" }] } },
  // After `<n>m` an `s` can start neither the seconds nor the milliseconds group (both begin
  // with a digit), so a whole-string match is the same with or without this lookahead.
  { find: "m(?!s)", add: {} },
];

/** One `pattern` rewritten for RE2, with the keywords that keep its meaning. */
export function re2Pattern(pattern: string): Json {
  let out = pattern;
  const extra: Json[] = [];
  for (const l of LOOKAROUNDS) {
    if (!out.includes(l.find)) continue;
    out = out.replaceAll(l.find, l.find === "m(?!s)" ? "m" : "");
    if (l.add && Object.keys(l.add).length) extra.push(l.add);
  }
  if (/\(\?<?[=!]/.test(out))
    throw new Error(
      `Cannot write values.schema.json: pattern ${pattern} has a lookaround RE2 cannot compile`,
    );
  return Object.assign({ pattern: out }, ...extra);
}

/** Every `pattern` in a JSON Schema, rewritten by re2Pattern (a new object; the input is kept). */
export function forRe2(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forRe2);
  if (node === null || typeof node !== "object") return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === "pattern" && typeof v === "string") Object.assign(out, re2Pattern(v));
    else out[k] = forRe2(v);
  }
  return out;
}

/** The chart's values schema: the chart's own values, and `config` as the product validates it. */
export function chartValuesSchema(): Json {
  const own = z.toJSONSchema(chartValues, { io: "input", target: "draft-2020-12" }) as Json;
  const { $schema, title: _t, description: _d, ...config } = configJsonSchema();
  const properties = { ...(own.properties as Json), config: forRe2(config) };
  return {
    $schema,
    title: "image-refresh Helm chart values",
    description:
      "Generated by scripts/gen-schema.ts: `config` is the image-refresh configuration (written into the ConfigMap as config.yaml), from the same schema the program validates it with. Rules across fields are checked by `image-refresh validate`.",
    type: "object",
    properties,
    required: [...((own.required as string[]) ?? []), "config"],
    additionalProperties: false,
  };
}

export function chartValuesSchemaText(): string {
  return `${JSON.stringify(chartValuesSchema(), null, 2)}\n`;
}
