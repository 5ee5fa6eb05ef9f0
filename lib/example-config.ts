// The documented configuration example as a plain object: the one application (Deployments apps/api and
// apps/api-proxy on myorg/api, DaemonSet agents/node-agent on myorg/node-agent) that the demo,
// the simulated scenario and the tests all follow; its bookkeeping lives in the store
// (ConfigMap image-refresh/image-refresh-state). Only the essentials: every other setting is
// left to its default, so tests of the defaults can start from it.

export function exampleConfig(registryHost = "docker.io") {
  return {
    tag: "stable",
    registry: { host: registryHost },
    namespace: "apps",
    store: { namespace: "image-refresh", name: "image-refresh-state" },
    images: [
      {
        repository: "myorg/api",
        targets: [
          { kind: "Deployment", name: "api", container: "api" },
          { kind: "Deployment", name: "api-proxy", container: "proxy" },
        ],
      },
      {
        repository: "myorg/node-agent",
        targets: [{ kind: "DaemonSet", namespace: "agents", name: "node-agent", container: "agent" }],
      },
    ],
  };
}
