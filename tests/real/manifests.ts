// Small manifests the real-tier stories apply with kubectl: a namespace and workloads of one or
// more containers, labelled by name, with nothing the real API server would default differently
// from what a user's manifest would leave out.
type Obj = Record<string, unknown>;

export interface Containers {
  /** One container named after the workload, or several. */
  image?: string;
  containers?: Array<{ name: string; image: string }>;
  replicas?: number;
}

export function namespace(name: string): Obj {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}

function template(name: string, c: Containers): Obj {
  const containers = c.containers ?? [{ name, image: c.image ?? "example.test/none:1" }];
  return {
    metadata: { labels: { app: name } },
    spec: { containers, terminationGracePeriodSeconds: 5 },
  };
}

function meta(ns: string, name: string): Obj {
  return { name, namespace: ns, labels: { app: name } };
}

export function deployment(
  ns: string,
  name: string,
  c: Containers & { progressDeadlineSeconds?: number },
): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(ns, name),
    spec: {
      replicas: c.replicas ?? 1,
      selector: { matchLabels: { app: name } },
      ...(c.progressDeadlineSeconds === undefined
        ? {}
        : { progressDeadlineSeconds: c.progressDeadlineSeconds }),
      template: template(name, c),
    },
  };
}

export function daemonSet(ns: string, name: string, c: Containers): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: meta(ns, name),
    spec: { selector: { matchLabels: { app: name } }, template: template(name, c) },
  };
}

export function statefulSet(ns: string, name: string, c: Containers & { partition?: number }): Obj {
  const rollingUpdate = c.partition === undefined ? {} : { rollingUpdate: { partition: c.partition } };
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: meta(ns, name),
    spec: {
      replicas: c.replicas ?? 1,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      updateStrategy: { type: "RollingUpdate", ...rollingUpdate },
      template: template(name, c),
    },
  };
}

export function job(ns: string, name: string, c: Containers): Obj {
  const t = template(name, c) as { metadata: Obj; spec: Obj };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: meta(ns, name),
    spec: {
      backoffLimit: 0,
      template: { metadata: t.metadata, spec: { ...t.spec, restartPolicy: "Never" } },
    },
  };
}

/** A v1 List of objects, as `kubectl apply -f -` reads it. */
export function list(items: Obj[]): string {
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}
