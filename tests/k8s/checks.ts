// Renders the kustomizations with kubectl; what the RBAC and the deadline must be for the
// config.yaml inside the rendered ConfigMap is lib/manifests.ts, the same rules that
// `image-refresh validate --manifests` applies, so the manifests and the config cannot drift apart.
import { join } from "node:path";
import { type Config, parseConfig } from "../../lib/config.ts";
import {
  configMapText,
  type K8sObject,
  minimumDeadlineSeconds,
  parseManifests,
} from "../../lib/manifests.ts";
import type { CronJob } from "./schemas.ts";

export {
  DEADLINE_SLACK_SECONDS,
  expectedPermissions,
  grantedPermissions,
  type K8sObject,
  targetsOf,
} from "../../lib/manifests.ts";

export const K8S = join(import.meta.dir, "..", "..", "k8s");

/** `kubectl kustomize k8s/<dir>` as text. */
export function renderText(dir: string): string {
  const kubectl = Bun.which("kubectl");
  if (!kubectl)
    throw new Error(
      "Cannot render manifests: kubectl is not on PATH (CI installs Debian's kubernetes-client)",
    );
  const r = Bun.spawnSync([kubectl, "kustomize", join(K8S, dir)], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

export function render(dir: string): K8sObject[] {
  return parseManifests(renderText(dir));
}

/** The config.yaml inside the rendered ConfigMap, read by the product's own parser with the
 * container's environment, so an invalid shipped config fails here and not in the first tick. */
export function shippedConfig(objects: K8sObject[], env: { name: string; value?: string }[] = []): Config {
  const text = configMapText(objects);
  if (text === undefined) throw new Error("no rendered ConfigMap carries config.yaml");
  return parseConfig(text, Object.fromEntries(env.map((e) => [e.name, e.value])), "the shipped config.yaml");
}

export function cronJobOf(objects: K8sObject[]): CronJob {
  const all = objects.filter((o) => o.kind === "CronJob");
  if (all.length !== 1) throw new Error(`expected one CronJob, rendered ${all.length}`);
  return all[0] as unknown as CronJob;
}

export const minimumDeadline = minimumDeadlineSeconds;
