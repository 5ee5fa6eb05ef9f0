// Live container images for the generated worlds, spelled the many ways a cluster spells them
// (Docker Hub's aliases, tag beside a digest, no tag at all), each with its class known by
// construction: the oracle judges a container by the class and digest recorded here, never by
// parsing the string, so a parsing bug in lib cannot agree with itself.
import type { FieldOwner } from "../../lib/kube/managed-fields.ts";

/** Field managers a container's image is last written by; null: no managedFields on record. */
export const MANAGERS = [
  "image-refresh",
  "image-refresh",
  "kubectl-set",
  "helm",
  "kubectl-rollout",
  null,
] as const;
export type Manager = (typeof MANAGERS)[number];

export type LiveClass = "R" | "L" | "digest" | "floating" | "other_tag" | "other_repo";

/** What a container runs, as the oracle reads it. */
export interface LiveTruth {
  image: string;
  /** `digest`: the configured repository pinned to `digest` (a tag beside it or not). */
  kind: "digest" | "floating" | "other_tag" | "other_repo";
  digest?: string;
  /** The last writer of the image field is image-refresh itself. */
  ours: boolean;
  owners: FieldOwner[];
}
/** workloadId → container → what it runs; only the containers the read returned. */
export type Truth = Record<string, Record<string, LiveTruth>>;

export interface LiveInput {
  host: string;
  repository: string;
  tag: string;
  recorded?: string;
  registry?: string;
}

/** The configured repository, in each spelling a runtime reads as the same one. */
function sameRepoNames(host: string, repository: string): string[] {
  const names = [`${host}/${repository}`];
  if (host === "docker.io") names.push(repository, `index.docker.io/${repository}`);
  return names;
}

/** References that are not the configured repository, a few of them deceptively close. */
function otherRepoNames(host: string, repository: string, tag: string, digest: string): string[] {
  return [
    "envoy:1",
    `${host}/myorg/other:${tag}`,
    `${host}/${repository}-canary@${digest}`,
    // the same path on another registry
    host === "docker.io" ? `ghcr.io/${repository}:${tag}` : `${repository}:${tag}`,
    `localhost/${repository}@${digest}`,
  ];
}

export function liveImage(
  input: LiveInput,
  choice: { cls: LiveClass; form: number; digest: string; who: Manager },
): LiveTruth {
  const { host, repository, tag } = input;
  const pick = <T>(xs: T[], n: number) => xs[n % xs.length] as T;
  const owners: FieldOwner[] =
    choice.who === null ? [] : [{ manager: choice.who, operation: "Update", time: "2026-12-01T11:00:00Z" }];
  const base = { ours: choice.who === "image-refresh", owners };
  const name = pick(sameRepoNames(host, repository), choice.form);
  const suffixForm = Math.floor(choice.form / 3);
  if (choice.cls === "R" || choice.cls === "L" || choice.cls === "digest") {
    const wanted = choice.cls === "R" ? input.recorded : choice.cls === "L" ? input.registry : undefined;
    const digest = wanted ?? choice.digest;
    const suffix = pick([`@${digest}`, `:${tag}@${digest}`, `:1.4.2@${digest}`], suffixForm);
    return { ...base, image: `${name}${suffix}`, kind: "digest", digest };
  }
  if (choice.cls === "floating") return { ...base, image: `${name}:${tag}`, kind: "floating" };
  if (choice.cls === "other_tag")
    // a reference without a tag is :latest to a runtime
    return { ...base, image: pick([`${name}:1.4.2`, `${name}:latest`, name], suffixForm), kind: "other_tag" };
  const image = pick(otherRepoNames(host, repository, tag, choice.digest), choice.form);
  return { ...base, image, kind: "other_repo" };
}
