// What the chart's Roles must grant for a config: lib/manifests.ts's expectedPermissions (the
// rule `image-refresh validate --manifests` applies), plus what the ConfigMap store version
// adds, in the same "namespace|group|resource|name|verb" notation. While lib/manifests.ts does
// not know the store yet, these additions are exactly the difference; once it does, the union
// changes nothing, and a difference in how it grants them makes the comparison fail.
import type { Config } from "../../../lib/config.ts";
import { expectedPermissions } from "../../../lib/manifests.ts";

export const STORE_NAME = "image-refresh-state";

/** In the store's namespace: create on configmaps (not limitable by name), get/patch on its name. */
export function storePermissions(namespace: string, name = STORE_NAME): string[] {
  return [
    `${namespace}||configmaps|*|create`,
    `${namespace}||configmaps|${name}|get`,
    `${namespace}||configmaps|${name}|patch`,
  ];
}

/** Events are posted on the workloads they concern: create on events in every target namespace. */
export function eventPermissions(config: Config): string[] {
  const namespaces = new Set(
    config.images.filter((i) => !i.pinned).flatMap((i) => i.targets.map((t) => t.namespace)),
  );
  return [...namespaces].map((ns) => `${ns}|events.k8s.io|events|*|create`);
}

export function chartPermissions(config: Config, storeNamespace: string): string[] {
  const all = new Set([
    ...expectedPermissions(config, storeNamespace),
    ...storePermissions(storeNamespace),
    ...eventPermissions(config),
  ]);
  return [...all].sort();
}
