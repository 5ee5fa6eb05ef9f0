// The standard scenario: one application as SPEC's configuration example describes it, shared
// by `image-refresh demo`, the end-to-end tests and the benchmarks so they all tell one story.
// Containers name the simulated registry's host, as a real pod spec must for its pulls to reach it.
// Deployment apps/api (the state object, with a sidecar we never touch) and apps/api-proxy follow
// myorg/api; DaemonSet agents/node-agent follows the multi-arch myorg/node-agent.
import { exampleConfig } from "../lib/example-config.ts";
import type { SimApiServer } from "./apiserver/index.ts";
import type { SimRegistry } from "./registry.ts";

export function seedScenario(api: SimApiServer, registry: SimRegistry): void {
  api.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "api",
    replicas: 3,
    containers: [
      { name: "api", image: `${registry.host}/myorg/api:stable` },
      { name: "sidecar", image: "envoy:1" },
    ],
  });
  api.addWorkload({
    kind: "Deployment",
    namespace: "apps",
    name: "api-proxy",
    replicas: 2,
    containers: [{ name: "proxy", image: `${registry.host}/myorg/api:stable` }],
  });
  api.addWorkload({
    kind: "DaemonSet",
    namespace: "agents",
    name: "node-agent",
    containers: [{ name: "agent", image: `${registry.host}/myorg/node-agent:stable` }],
  });
  registry.push("myorg/api", "stable");
  registry.push("myorg/node-agent", "stable", { multiArch: true });
}

/** The configuration (as a plain object, written out as JSON) that follows the scenario. */
export function scenarioConfig(registryHost: string, settings: Record<string, unknown> = {}) {
  const timing = { maxRefreshAttempts: 3, maxSkipTicks: 3, rolloutTimeout: "2s", requestTimeout: "1s" };
  return { ...exampleConfig(registryHost), ...timing, ...settings };
}
