// Compiles the zod schemas of a tick's boundaries (its config and kubeconfig, the store, workload
// and pod objects it reads, its pull secret and the registry's token) into plain checks
// (lib/checks/compile.ts): `bun scripts/gen-checks.ts` writes lib/checks/checks.generated.ts.
// lib/checks/checks.test.ts fails while a committed file differs from what this writes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileChecks } from "../lib/checks/compile.ts";
import * as refinements from "../lib/checks/refinements.ts";
import { configSchema } from "../lib/config-schema.ts";
import { configMapSchema } from "../lib/kube/configmaps.ts";
import { kubeconfigSchemas } from "../lib/kube/kubeconfig.ts";
import { managedFieldsSchema } from "../lib/kube/managed-fields.ts";
import { workloadSchema } from "../lib/kube/objects.ts";
import { podSchema } from "../lib/kube/pods.ts";
import { tokenResponseSchema } from "../lib/registry/auth.ts";
import { dockerConfigSchemas } from "../lib/registry/credentials.ts";

const DIR = join(import.meta.dir, "..", "lib", "checks");

/** The compiled module's path and text. */
export function generatedChecks(): Array<[path: string, text: string]> {
  const schemas = {
    Config: configSchema(),
    Kubeconfig: kubeconfigSchemas().file,
    ConfigMap: configMapSchema(),
    Workload: workloadSchema(),
    ManagedFields: managedFieldsSchema(),
    Pod: podSchema(),
    DockerConfig: dockerConfigSchemas().wrapped,
    DockerCfg: dockerConfigSchemas().map,
    TokenResponse: tokenResponseSchema(),
  };
  return [[join(DIR, "checks.generated.ts"), compileChecks(schemas, refinements)]];
}

if (import.meta.main) {
  for (const [path, text] of generatedChecks()) {
    writeFileSync(path, text);
    process.stderr.write(`wrote ${path}\n`);
  }
}
