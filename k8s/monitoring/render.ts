// The alerts of rules.yaml for one kustomize overlay (or any CronJob): its CronJob's namespace and
// name, and its store, read from what the overlay renders, so the rules watch that CronJob and
// that store whatever the overlay renamed. Prints a PrometheusRule (Prometheus Operator), or with
// --plain a rules file for Prometheus' rule_files.
//
//   npx bun k8s/monitoring/render.ts --overlay k8s/overlays/prod > k8s/overlays/prod/prometheusrule.yaml
//   npx bun k8s/monitoring/render.ts --overlay k8s/overlays/prod --plain > image-refresh.rules.yaml
//   npx bun k8s/monitoring/render.ts --namespace platform --cronjob image-refresh \
//     --installation platform/image-refresh-state [--runbook-url URL]
//
// --overlay renders the overlay with `kubectl kustomize` (or $KUSTOMIZE, e.g. `kustomize build`).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseConfig } from "../../lib/config.ts";
import { configMapText, cronJobOf, type K8sObject, parseManifests } from "../../lib/manifests.ts";
import { DEFAULT_RUNBOOK, type Install, renderPrometheusRule, renderRules } from "./install.ts";

export const RULES = join(import.meta.dir, "rules.yaml");

/** The install an overlay's objects describe: its CronJob, and the store its config names. */
export function installOf(objects: readonly K8sObject[], runbook = DEFAULT_RUNBOOK): Install {
  const cron = cronJobOf(objects);
  const namespace = cron.metadata.namespace ?? "default";
  const text = configMapText(objects);
  if (text === undefined)
    throw new Error("Cannot render the rules: no ConfigMap of the overlay carries config.yaml");
  const config = parseConfig(text, {}, "the overlay's config.yaml");
  // Without store.namespace the store is in the pod's namespace: the CronJob's.
  const store = `${config.store.namespace ?? namespace}/${config.store.name}`;
  return { namespace, cronjob: cron.metadata.name, installation: store, runbook };
}

function kustomize(dir: string): K8sObject[] {
  const cmd = process.env.KUSTOMIZE ? [process.env.KUSTOMIZE, "build", dir] : ["kubectl", "kustomize", dir];
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`Cannot render ${dir}: ${cmd.join(" ")} failed: ${r.stderr}`);
  return parseManifests(r.stdout.toString());
}

function main(argv: string[]): string {
  const { values } = parseArgs({
    args: argv,
    options: {
      overlay: { type: "string" },
      namespace: { type: "string" },
      cronjob: { type: "string" },
      installation: { type: "string" },
      "runbook-url": { type: "string", default: DEFAULT_RUNBOOK },
      plain: { type: "boolean", default: false },
    },
  });
  const runbook = values["runbook-url"] as string;
  let install: Install;
  if (values.overlay) install = installOf(kustomize(values.overlay), runbook);
  else if (values.namespace && values.cronjob)
    install = {
      namespace: values.namespace,
      cronjob: values.cronjob,
      // Without --installation, the store's default: image-refresh-state in the CronJob's namespace.
      installation: values.installation ?? `${values.namespace}/image-refresh-state`,
      runbook,
    };
  else throw new Error("Cannot render the rules: give --overlay DIR, or --namespace and --cronjob");
  const source = readFileSync(RULES, "utf8");
  return values.plain ? renderRules(source, install) : renderPrometheusRule(source, install);
}

if (import.meta.main) {
  try {
    process.stdout.write(main(process.argv.slice(2)));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
}
