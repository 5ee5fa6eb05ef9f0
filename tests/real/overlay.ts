// A shipped kustomization as the real tier uses it: rendered by the real kubectl, its config.yaml
// and CronJob environment read back, its Roles (whatever they hold: they are taken from the
// rendering, never listed here) and the workloads its config names, seeded on the floating tag
// of the run's registry as a fresh install would leave them.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { type Config, parseConfig } from "../../lib/config.ts";
import {
  configMapText,
  cronJobOf,
  type K8sObject,
  parseManifests,
  serviceAccountOf,
} from "../../lib/manifests.ts";
import type { Cluster } from "./cluster.ts";
import { ok } from "./kubectl.ts";
import { daemonSet, deployment, list, namespace, statefulSet } from "./manifests.ts";

export const K8S = join(import.meta.dir, "..", "..", "k8s");

export interface Overlay {
  objects: K8sObject[];
  config: Config;
  raw: Record<string, unknown>;
  env: Record<string, string>;
  sa: { namespace: string; name: string };
}

export async function renderOverlay(c: Cluster, dir: string): Promise<Overlay> {
  const text = await ok(c.kubectl(["kustomize", join(K8S, dir)]), `kubectl kustomize k8s/${dir}`);
  const objects = parseManifests(text);
  const job = cronJobOf(objects);
  const envList = job.spec.jobTemplate.spec.template.spec.containers[0]?.env ?? [];
  const cm = configMapText(objects) ?? "";
  const envMap = Object.fromEntries(envList.map((e) => [e.name, e.value ?? ""]));
  // The config path is given as --config; the rest is the CronJob's environment as shipped.
  const { IMAGE_REFRESH_CONFIG: _path, ...env } = envMap;
  return {
    objects,
    config: parseConfig(cm, envMap, "the shipped config.yaml"),
    raw: parseYaml(cm) as Record<string, unknown>,
    env,
    sa: serviceAccountOf(job),
  };
}

/** The shipped config.yaml pointed at the run's registry, with short waits, written to `path`. */
export function writeTickConfig(
  o: Overlay,
  path: string,
  host: string,
  tweak: Record<string, unknown> = {},
): void {
  const registry = { ...(o.raw.registry as object), host };
  writeFileSync(
    path,
    JSON.stringify({
      ...o.raw,
      registry,
      rolloutTimeout: "20s",
      requestTimeout: "5s",
      verifyFor: "2s",
      ...tweak,
    }),
  );
}

type Kind = "Deployment" | "DaemonSet" | "StatefulSet";

/** Every workload the config names (its targets), its containers on the tag. */
export function seedWorkloads(o: Overlay, host: string): Array<Record<string, unknown>> {
  const wanted = new Map<
    string,
    { kind: Kind; ns: string; name: string; containers: Array<{ name: string; image: string }> }
  >();
  const at = (kind: Kind, ns: string, name: string) => {
    const key = `${kind}/${ns}/${name}`;
    if (!wanted.has(key)) wanted.set(key, { kind, ns, name, containers: [] });
    return wanted.get(key) as { containers: Array<{ name: string; image: string }> };
  };
  for (const image of o.config.images)
    for (const t of image.targets)
      at(t.kind, t.namespace, t.name).containers.push({
        name: t.container,
        image: `${host}/${image.repository}:${o.config.tag}`,
      });
  return [...wanted.values()].map((w) => {
    const make = { Deployment: deployment, DaemonSet: daemonSet, StatefulSet: statefulSet }[w.kind];
    return make(w.ns, w.name, { containers: w.containers });
  });
}

/** The namespaces the workloads live in, which the overlay expects to exist before it is applied. */
export function workloadNamespaces(o: Overlay): string[] {
  return [...new Set(o.config.images.flatMap((i) => i.targets.map((t) => t.namespace)))];
}

/** Creates the workload namespaces and the seeded workloads (kubectl apply, as a user would). */
export async function applyWorkloads(c: Cluster, o: Overlay, host: string): Promise<void> {
  const items = [...workloadNamespaces(o).map(namespace), ...seedWorkloads(o, host)];
  await ok(c.kubectl(["apply", "-f", "-"], { stdin: list(items) }), "kubectl apply the workloads");
  for (const w of seedWorkloads(o, host)) await rolledOut(c, w);
}

/**
 * Deletes the seeded workloads (and their pods) and every ConfigMap in the CronJob's namespace
 * that the rendering did not make (the product's own store among them), so the
 * next story starts from a fresh install.
 */
export async function deleteWorkloads(c: Cluster, o: Overlay, host: string): Promise<void> {
  const ns = o.sa.namespace;
  const rendered = new Set(o.objects.filter((x) => x.kind === "ConfigMap").map((x) => x.metadata.name));
  const maps: Array<{ metadata: { name: string } }> = (
    await c.cp.admin.get(`/api/v1/namespaces/${ns}/configmaps`)
  ).items;
  for (const m of maps)
    if (!rendered.has(m.metadata.name) && m.metadata.name !== "kube-root-ca.crt")
      await ok(
        c.kubectl(["delete", "configmap", m.metadata.name, "-n", ns, "--wait"]),
        `delete configmap ${m.metadata.name}`,
      );
  for (const w of seedWorkloads(o, host)) {
    const m = w.metadata as { namespace: string; name: string };
    const ref = `${String(w.kind).toLowerCase()}/${m.name}`;
    await ok(
      c.kubectl(["delete", ref, "-n", m.namespace, "--cascade=foreground", "--wait", "--timeout=60s"]),
      `delete ${ref}`,
    );
  }
}

/** Waits for `kubectl rollout status` of a workload object to say it rolled out. */
export async function rolledOut(c: Cluster, w: Record<string, unknown>, timeout = "60s"): Promise<string> {
  const m = w.metadata as { namespace: string; name: string };
  const ref = `${String(w.kind).toLowerCase()}/${m.name}`;
  return await ok(
    c.kubectl(["rollout", "status", ref, "-n", m.namespace, `--timeout=${timeout}`]),
    `rollout status ${ref}`,
  );
}
