// A simulated cluster and registry seeded from a user's own config, for `image-refresh
// playground`: every repository gets a first build under the config's tag, every target
// workload exists with the configured containers naming that tag (as a fresh `helm install`
// renders it), and the moves a user wants to try are plain functions over the two simulators.
import type { Config, WorkloadKind } from "../lib/config.ts";
import { pinnedReference } from "../lib/registry/reference.ts";
import { rolloutStatus } from "./apiserver/driver.ts";
import type { BadBuild, SimApiServer } from "./apiserver/index.ts";
import type { SimRegistry } from "./registry.ts";

export interface Workload {
  kind: WorkloadKind;
  namespace: string;
  name: string;
  /** Container name -> the repository it follows (config order). */
  containers: Map<string, string>;
}

export interface Playground {
  config: Config;
  api: SimApiServer;
  registry: SimRegistry;
  workloads: Workload[];
  /** Each repository's first build: the digest its image's tag points at when the playground starts. */
  firstBuilds: Map<string, string>;
  /** Workloads whose next build is bad, keyed like `id()`, and how it fails. */
  flapping: Map<string, BadBuild>;
}

/** The field manager a Helm 3 release writes as, for the seed and a re-render. */
export const HELM_MANAGER = "helm";
const REPLICAS: Record<WorkloadKind, number> = { Deployment: 2, StatefulSet: 2, DaemonSet: 3 };

export const id = (w: { kind: string; namespace: string; name: string }): string =>
  `${w.namespace}/${w.kind.toLowerCase()}/${w.name}`;

/** Every distinct target workload (pinned images' too: they exist in the cluster), config order. */
export function workloadsOf(config: Config): Workload[] {
  const byId = new Map<string, Workload>();
  for (const image of config.images)
    for (const t of image.targets) {
      const w = byId.get(id(t)) ?? {
        kind: t.kind,
        namespace: t.namespace,
        name: t.name,
        containers: new Map(),
      };
      w.containers.set(t.container, image.repository);
      byId.set(id(w), w);
    }
  return [...byId.values()];
}

/** Pushes every repository's first build and creates the workloads (and the legacy state object). */
export function seedPlayground(config: Config, api: SimApiServer, registry: SimRegistry): Playground {
  const firstBuilds = new Map<string, string>();
  for (const img of config.images)
    if (!firstBuilds.has(img.repository))
      firstBuilds.set(img.repository, registry.push(img.repository, img.tag));
  const workloads = workloadsOf(config);
  // Each image on its own registry's host and its own tag (one simulator serves them all).
  const tagRef = (repo: string) => {
    const img = config.images.find((i) => i.repository === repo) as Config["images"][number];
    return `${img.registry.host}/${repo}:${img.tag}`;
  };
  for (const w of workloads)
    api.addWorkload({
      kind: w.kind,
      namespace: w.namespace,
      name: w.name,
      replicas: REPLICAS[w.kind],
      containers: [...w.containers].map(([name, repo]) => ({ name, image: tagRef(repo) })),
      manager: HELM_MANAGER,
    });
  const s = config.state;
  // image-refresh's own namespace, where its store is created by the first write.
  api.ensureNamespace(config.store.namespace ?? "image-refresh");
  if (s && !workloads.some((w) => id(w) === id(s)))
    api.addWorkload({
      kind: s.kind,
      namespace: s.namespace,
      name: s.name,
      containers: [{ name: "app", image: "registry.k8s.io/pause:3.10" }],
      manager: HELM_MANAGER,
    });
  return { config, api, registry, workloads, firstBuilds, flapping: new Map() };
}

/** An image by key or repository; the error names the known keys. */
export function imageOf(p: Playground, name: string | undefined) {
  const img = p.config.images.find((i) => i.key === name || i.repository === name);
  if (!img)
    throw new Error(
      `no image ${JSON.stringify(name ?? "")}: known keys are ${p.config.images.map((i) => i.key).join(", ")}`,
    );
  return img;
}

/** `[namespace/]kind/name`; the namespace may be left out when only one workload matches. */
export function workloadOf(p: Playground, ref: string | undefined): Workload {
  const parts = (ref ?? "").split("/");
  const [ns, kind, name] = parts.length === 3 ? parts : [undefined, parts[0], parts[1]];
  const k = KIND_NAMES[(kind ?? "").toLowerCase()];
  const found = p.workloads.filter(
    (w) => w.kind === k && w.name === name && (ns === undefined || w.namespace === ns),
  );
  if (found.length === 1) return found[0] as Workload;
  const known = p.workloads.map(id).join(", ");
  throw new Error(
    `${found.length ? "more than one" : "no"} workload ${JSON.stringify(ref ?? "")}: known are ${known}`,
  );
}

const KIND_NAMES: Record<string, WorkloadKind> = {
  deployment: "Deployment",
  deploy: "Deployment",
  daemonset: "DaemonSet",
  ds: "DaemonSet",
  statefulset: "StatefulSet",
  sts: "StatefulSet",
};

/** A new build of an image's repository under the tag; workloads armed with `flap` fail on it. */
export function publish(p: Playground, key: string | undefined): string {
  const img = imageOf(p, key);
  const digest = p.registry.push(img.repository, img.tag);
  const bad = pinnedReference(img.registry.host, img.repository, digest);
  const failing: string[] = [];
  for (const w of p.workloads) {
    const how = p.flapping.get(id(w));
    if (!how || ![...w.containers.values()].includes(img.repository)) continue;
    p.api.failImages(w.kind, w.namespace, w.name, [bad], how);
    p.flapping.delete(id(w));
    failing.push(`${badNote(how)} on ${id(w)}`);
  }
  const note = failing.length ? `; ${failing.join("; ")}` : "";
  return `published ${img.repository}:${img.tag} -> ${digest}${note}`;
}

function badNote(how: BadBuild): string {
  if (typeof how === "string") return "its pods never become available";
  if ("crashAfterMs" in how) return `its pods become Ready, then crash ${how.crashAfterMs / 1000}s later`;
  if ("restartOnceAfterMs" in how)
    return `its pods become Ready, then restart once ${how.restartOnceAfterMs / 1000}s later and are Ready again`;
  return `its pods become Ready, then turn unready ${how.unreadyAfterMs / 1000}s later`;
}

/** The workload's next build (the next one published for it) never becomes available. */
export function flap(p: Playground, ref: string | undefined): string {
  const w = workloadOf(p, ref);
  p.flapping.set(id(w), "flap");
  return `${id(w)}: the next build published for it will never become available (the old one still does)`;
}

/** The workload's next build becomes Ready, then crashes `seconds` later (a build that dies after its warm-up). */
export function crash(
  p: Playground,
  ref: string | undefined,
  seconds: string | undefined,
  fallback: number,
): string {
  const w = workloadOf(p, ref);
  const s = seconds === undefined ? fallback : Number(seconds);
  if (!Number.isFinite(s) || s < 0)
    throw new Error(`SECONDS must be a number of seconds, not ${JSON.stringify(seconds)}`);
  p.flapping.set(id(w), { crashAfterMs: Math.round(s * 1000) });
  return `${id(w)}: the next build published for it becomes Ready, then crashes ${s}s later (the old one stays fine)`;
}

/** From now on a rollout of the workload never finishes: not failed, just never done. */
export function hang(p: Playground, ref: string | undefined): string {
  const w = workloadOf(p, ref);
  // The controller's "flap" mode: whatever a rollout starts, its new pods never become available
  // (the settled state it is in now stays as it is until something changes the template).
  p.api.setMode(w.kind, w.namespace, w.name, "flap");
  return `${id(w)}: its next rollout hangs (never settles) until \`heal ${id(w)}\``;
}

/** Back to healthy rollouts, no bad build, nothing armed. */
export function heal(p: Playground, ref: string | undefined): string {
  const w = workloadOf(p, ref);
  p.flapping.delete(id(w));
  p.api.failImages(w.kind, w.namespace, w.name, []);
  p.api.setMode(w.kind, w.namespace, w.name, "healthy");
  return `${id(w)}: rollouts are healthy again`;
}

/** `kubectl set image` as a human: `CONTAINER=IMAGE`, field manager kubectl-set. */
export function setImage(p: Playground, ref: string | undefined, assignment: string | undefined): string {
  const w = workloadOf(p, ref);
  const eq = assignment?.indexOf("=") ?? -1;
  const container = assignment?.slice(0, eq) ?? "";
  if (eq <= 0 || eq === (assignment?.length ?? 0) - 1)
    throw new Error(`set-image needs CONTAINER=IMAGE, e.g. ${[...w.containers.keys()][0]}=myorg/app:1.2`);
  p.api.setImage(w.kind, w.namespace, w.name, container, (assignment as string).slice(eq + 1));
  return `${id(w)}: container ${container} set by kubectl-set (a human)`;
}

/** A Helm upgrade renders the floating tag again over every target of the image. */
export function rerender(p: Playground, key: string | undefined): string {
  const img = imageOf(p, key);
  const ref = `${img.registry.host}/${img.repository}:${img.tag}`;
  for (const t of img.targets)
    p.api.setImage(t.kind, t.namespace, t.name, t.container, ref, { manager: HELM_MANAGER });
  return `${img.key}: helm rendered ${ref} over ${img.targets.length} container(s)`;
}

/** Every workload's containers and rollout status, one line each. */
export function show(p: Playground): string {
  return p.workloads
    .map((w) => {
      const obj = p.api.getObject(w.kind, w.namespace, w.name);
      const spec = obj.spec.template.spec;
      const images = [...(spec.containers ?? []), ...(spec.initContainers ?? [])]
        .filter((c: { name: string }) => w.containers.has(c.name))
        .map((c: { name: string; image: string }) => `${c.name}=${c.image}`);
      return `${id(w)}: ${images.join(" ")} (${rolloutText(obj)})`;
    })
    .join("\n");
}

function rolloutText(obj: unknown): string {
  try {
    const r = rolloutStatus(obj);
    return r.done ? "settled" : r.message;
  } catch (err) {
    return (err as Error).message;
  }
}
