// THE ONE PLACE that says how the pipeline names an installation and an image: which store an
// installation's ticks use, the label its series and alerts carry (`<store namespace>/<store
// name>`), and the gauges the scenarios read. When that naming changes or gauges are added, this
// file changes and the scenarios do not.

import type { World } from "../../support/world.ts";

/** An installation's store (its own ConfigMap) in its simulated cluster: namespace = installation name. */
export function storeOf(installation: string) {
  return { namespace: installation, name: "image-refresh-state" };
}

/** The store's data (the book), keys as stored. */
export function bookOf(world: World, installation: string): Record<string, string> {
  const s = storeOf(installation);
  return world.api.getConfigMap(s.namespace, s.name)?.data ?? {};
}

/** The installation as every point, resource (service.instance.id) and alert summary spells it. */
export function installationText(installation: string): string {
  const s = storeOf(installation);
  return `${s.namespace}/${s.name}`;
}

/** The labels an installation's series and alerts carry (image_refresh.installation on each point). */
export function installationLabels(installation: string): Record<string, string> {
  return { image_refresh_installation: installationText(installation) };
}

/** A target workload of image `api` (the scenarios' config), for a story whose target stops settling. */
export const API_TARGET = { kind: "Deployment" as const, namespace: "apps", name: "api" };

/** The labels a per-image alert adds: the image key and the repository. */
export function imageLabels(key: string): Record<string, string> {
  const repository = key === "api" ? "myorg/api" : `myorg/${key}`;
  return { image_refresh_image: key, container_image_name: repository };
}

/** A PromQL selector of one installation's series. */
export function selectorOf(installation: string): string {
  return Object.entries(installationLabels(installation))
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
}

/** The gauges of an installation and of each image, as Prometheus names them. */
export const INSTALLATION_GAUGES = ["image_refresh_last_success_timestamp_seconds"] as const;
export const IMAGE_GAUGES = [
  "image_refresh_frozen",
  "image_refresh_skip_streak",
  "image_refresh_attempt_count",
  "image_refresh_locked_out",
  "image_refresh_paused",
  "image_refresh_unresolved_streak",
  "image_refresh_in_sync",
  "image_refresh_last_verified_timestamp_seconds",
] as const;
