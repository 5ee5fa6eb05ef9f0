// What each target container of an image actually runs, classified against the configured image
//: pinned to a digest, the floating tag re-rendered, another tag, or another
// repository altogether. References are compared after normalisation (image-ref.ts), so
// `myorg/api:stable` and `index.docker.io/myorg/api@sha256:…` are the same repository. Pure.
import type { Config, ImageConfig, Target } from "../../config.ts";
import { FIELD_MANAGER, type FieldOwner, lastOwner } from "../../kube/managed-fields.ts";
import { configuredRef, parseImageRef, sameRepository } from "../../registry/image-ref.ts";
import { describeWorkload, workloadId } from "../../workload.ts";
import type { Observed } from "../model.ts";

export type ContainerState = "pinned" | "floating" | "other_tag" | "other_repo";

export interface LiveContainer {
  target: Target;
  image: string;
  state: ContainerState;
  /** The digest a pinned container names (with or without a tag beside it). */
  digest?: string;
  /** Who last changed the image field (managedFields); undefined: nobody on record. */
  owner?: FieldOwner;
  /** image-refresh itself wrote this image: its own pins are never a human's pause. */
  ours: boolean;
}

export interface LiveImage {
  /** Targets that cannot be read or have no such container: they hold the image. */
  problems: string[];
  /** Targets whose rollout could not start (OnDelete, a paused Deployment): they hold a due refresh. */
  blocked: string[];
  containers: LiveContainer[];
}

/** Every target of the image as read this tick; undefined when the targets were not read at all. */
export function liveImage(img: ImageConfig, observed: Observed, config: Config): LiveImage | undefined {
  if (!observed.workloads) return undefined;
  const want = configuredRef(img.registry.host, img.repository);
  const live: LiveImage = { problems: [], blocked: [], containers: [] };
  for (const t of img.targets) {
    const w = observed.workloads[workloadId(t)];
    const what = describeWorkload(t);
    if (!w) live.problems.push(`${what} was not read`);
    else if (!w.found) live.problems.push(`${what}: ${w.message}`);
    else if (w.images[t.container] === undefined)
      live.problems.push(`${what} ${noSuchContainer(t.container, w.images)}`);
    else {
      if (w.blocked && !live.blocked.includes(`${what}: ${w.blocked}`))
        live.blocked.push(`${what}: ${w.blocked}`);
      const image = w.images[t.container] as string;
      const owners = w.owners?.[t.container] ?? [];
      const state = classify(image, want, img.tag);
      const owner = lastOwner(owners);
      const ours = owners.some((x) => x.manager === FIELD_MANAGER);
      live.containers.push({ target: t, image, ...state, owner, ours });
    }
  }
  return live;
}

function classify(
  image: string,
  want: ReturnType<typeof configuredRef>,
  tag: string,
): Pick<LiveContainer, "state" | "digest"> {
  const ref = parseImageRef(image);
  if (!ref || !want || !sameRepository(want, ref)) return { state: "other_repo" };
  if (ref.digest !== undefined) return { state: "pinned", digest: ref.digest };
  // A runtime pulls a reference without tag or digest as :latest.
  return { state: (ref.tag ?? "latest") === tag ? "floating" : "other_tag" };
}

/** A wrong container name in the config is found faster when the message lists the right ones. */
export function noSuchContainer(name: string, images: Record<string, string>): string {
  const there = Object.keys(images);
  const list = there.length ? there.map((n) => `"${n}"`).join(", ") : "none";
  return `has no container named "${name}" (its containers: ${list})`;
}

/** `Deployment apps/api container api`. */
export function describeContainer(container: Pick<LiveContainer, "target">): string {
  return `${describeWorkload(container.target)} container ${container.target.container}`;
}

/** `kubectl-set at 2026-12-01T10:00:00Z`, or that no manager is on record. */
export function describeOwner(owner: FieldOwner | undefined): string {
  if (!owner) return "a writer not on record (no managedFields)";
  return owner.time ? `${owner.manager} at ${owner.time}` : owner.manager;
}
