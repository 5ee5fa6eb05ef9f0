// Reading a plan() Decision in the properties: its actions by type, what it rolls out and what
// it writes. Shared by the plan property files; nothing here judges, it only looks.
import type { Config } from "../../lib/config.ts";
import type { Action, Decision, Observed } from "../../lib/tick/model.ts";
import type { Truth } from "./live-images.ts";

/**
 * A plan property gets the config, the observation, the decision and the truth about every
 * container read (class, digest, last writer, by construction); it throws on a violation.
 */
export type Property = [string, (c: Config, o: Observed, d: Decision, t: Truth) => void];

export const types = (d: Decision) => d.actions.map((a) => a.type);
export const of = <T extends Action["type"]>(d: Decision, t: T) =>
  d.actions.filter((a): a is Extract<Action, { type: T }> => a.type === t);
export type StateWriteAction = Extract<Action, { type: "write-state" }>;

export const rolled = (d: Decision) => new Set(of(d, "rollout").flatMap((r) => r.images));
export const writes = (d: Decision) => of(d, "write-state");
export const verdict = (d: Decision, key: string) => d.images.find((v) => v.key === key);
export const rolledWorkloads = (d: Decision) =>
  new Set(of(d, "rollout").map((r) => `${r.workload.kind}/${r.workload.namespace}/${r.workload.name}`));

/**
 * Every store key a decision sets or removes, in order: the write-state's change and the digest
 * records with the candidates they carry (the attempt keys apply adds are in `attempts`).
 */
export const written = (_c: Config, d: Decision): Array<[string, string | null]> =>
  d.actions.flatMap((a): Array<[string, string | null]> => {
    if (a.type === "write-state") return Object.entries(a.change);
    if (a.type === "record-digests")
      return [
        ...Object.entries(a.digests).map(([key, v]): [string, string] => [`last-refreshed-${key}-digest`, v]),
        ...Object.entries(a.candidates ?? {}).map(([key, v]): [string, string | null] => [
          `candidates-${key}`,
          v,
        ]),
      ];
    return [];
  });

/** The containers patched for one image: `<kind>/<namespace>/<name>/<container>` → image. */
export function patchedFor(c: Config, d: Decision, key: string): Map<string, string> {
  const img = c.images.find((i) => i.key === key);
  const out = new Map<string, string>();
  for (const r of of(d, "rollout"))
    for (const ct of r.containers)
      if (
        img?.targets.some(
          (t) =>
            t.kind === r.workload.kind &&
            t.namespace === r.workload.namespace &&
            t.name === r.workload.name &&
            t.container === ct.name,
        )
      )
        out.set(`${r.workload.kind}/${r.workload.namespace}/${r.workload.name}/${ct.name}`, ct.image);
  return out;
}

/** The store keys that are one image's own. */
export const imageKeys = (_c: Config, key: string) => [
  `last-refreshed-${key}-digest`,
  `refresh-attempt-${key}`,
  `refresh-flap-detected-${key}`,
  `refresh-attempt-traceparent-${key}`,
  `failed-${key}-digest`,
  `skip-streak-${key}`,
  `unresolved-streak-${key}`,
  `repin-streak-${key}`,
  `paused-${key}`,
  `candidates-${key}`,
  `rejected-${key}-digest`,
  `last-attempt-${key}`,
  `adopt-${key}`,
];
