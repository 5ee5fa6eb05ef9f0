// The standard scenario: one application as the configuration example of docs/configuration.md describes it, shared
// by `image-refresh demo`, the end-to-end tests and the benchmarks so they all tell one story.
// Containers name the simulated registry's host, as a real pod spec must for its pulls to reach it.
// Deployment apps/api (with a sidecar we never touch) and apps/api-proxy follow
// myorg/api; DaemonSet agents/node-agent follows the multi-arch myorg/node-agent.
//
// `pinned` (the tests' default) seeds the containers already pinned to the builds the registry
// serves, as an installation that is in sync looks once its digests are recorded; without it the
// containers name the floating tag, as a fresh Helm install does, and the tick after the first
// observation re-pins them once (adoption: one rollout per workload ends the tag's skew between
// nodes): the demo tells that story.
import { exampleConfig } from "../lib/example-config.ts";
import type { SimApiServer } from "./apiserver/index.ts";
import type { SimRegistry } from "./registry.ts";

export function seedScenario(
  api: SimApiServer,
  registry: SimRegistry,
  opts: { pinned?: boolean } = {},
): void {
  // image-refresh's own namespace, where its store (a ConfigMap) is created by the first write.
  api.ensureNamespace("image-refresh");
  const api1 = registry.push("myorg/api", "stable");
  const agent1 = registry.push("myorg/node-agent", "stable", { multiArch: true });
  const pinned = opts.pinned ?? true;
  const ref = (repo: string, digest: string) =>
    pinned ? `${registry.host}/${repo}@${digest}` : `${registry.host}/${repo}:stable`;
  api.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "api",
    replicas: 3,
    containers: [
      { name: "api", image: ref("myorg/api", api1) },
      { name: "sidecar", image: "envoy:1" },
    ],
  });
  api.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "api-proxy",
    replicas: 2,
    containers: [{ name: "proxy", image: ref("myorg/api", api1) }],
  });
  api.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "node-agent",
    containers: [{ name: "agent", image: ref("myorg/node-agent", agent1) }],
  });
}

/** The configuration (as a plain object, written out as JSON) that follows the scenario. */
export function scenarioConfig(registryHost: string, settings: Record<string, unknown> = {}) {
  // verifyFor is short but not zero: every rollout of a story is verified, as in a cluster.
  const timing = {
    maxRefreshAttempts: 3,
    maxSkipTicks: 3,
    rolloutTimeout: "2s",
    requestTimeout: "1s",
    verifyFor: "200ms",
  };
  return { ...exampleConfig(registryHost), ...timing, ...settings };
}
