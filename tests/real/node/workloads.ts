// Workloads of the node tier's test servers: their readiness probe asks /ready on port 8080 once
// a second with the generous timeout two shared cores need; a short grace period, because the
// servers exit on TERM at once.
type Obj = Record<string, unknown>;

export function server(name: string, image: string): Obj {
  return {
    name,
    image,
    ports: [{ containerPort: 8080 }],
    readinessProbe: {
      httpGet: { path: "/ready", port: 8080 },
      periodSeconds: 1,
      timeoutSeconds: 3,
      failureThreshold: 2,
    },
  };
}

export function serverDeployment(ns: string, name: string, image: string, replicas = 1): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [server(name, image)], terminationGracePeriodSeconds: 2 },
      },
    },
  };
}
