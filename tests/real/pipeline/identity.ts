// THE ONE PLACE that says how the pipeline names an installation and an image: which state
// object an installation's ticks use, the labels its series and alerts carry, and the gauges the
// scenarios read. When the installation becomes the store (`<store namespace>/<store name>`, one
// label) or gauges are added, this file changes and the scenarios do not.

/** An installation's own state object in its simulated cluster: namespace = installation name. */
export function stateObject(installation: string) {
  return { kind: "Deployment" as const, namespace: installation, name: "state" };
}

/** The labels an installation's series and alerts carry (the state object's, from each point). */
export function installationLabels(installation: string): Record<string, string> {
  const s = stateObject(installation);
  return { k8s_namespace_name: s.namespace, k8s_deployment_name: s.name };
}

/** The installation as the alerts' summaries spell it. */
export function installationText(installation: string): string {
  const s = stateObject(installation);
  return `${s.namespace}/${s.name}`;
}

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
export const INSTALLATION_GAUGES = [
  "image_refresh_frozen",
  "image_refresh_skip_streak",
  "image_refresh_last_success_timestamp_seconds",
] as const;
export const IMAGE_GAUGES = [
  "image_refresh_attempt_count",
  "image_refresh_locked_out",
  "image_refresh_paused",
  "image_refresh_unresolved_streak",
  "image_refresh_in_sync",
  "image_refresh_last_verified_timestamp_seconds",
] as const;
