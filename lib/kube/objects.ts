// Workload objects parsed once at the boundary, and the paths and names that address them.
// Parsing is tolerant of what the apiserver omits (omitempty zeroes come back as undefined and
// the rollout rules read them as 0) and strict about wrong types: a string where a number belongs
// is an error, never a silent 0 that could make an unsettled workload look settled.
import type * as z from "zod/mini";
import { checkWorkload } from "../checks/checks.generated.ts";
import { emptyIfAbsent } from "../checks/refinements.ts";
import { formatPath, lazy, parseChecked } from "../issues.ts";

import { apiRootOf, WORKLOAD_KIND_TABLE, type WorkloadKind, type WorkloadRef } from "../workload.ts";

export { nameAttribute, WORKLOAD_KINDS, type WorkloadKind } from "../workload.ts";
export type ObjectRef = WorkloadRef;

/** A workload (apps/v1) as the rules read it (compiled into lib/checks/checks.generated.ts). */
export const workloadSchema = lazy((z) => {
  const count = z.optional(z.int());
  const text = z.string();
  const optionalText = z.optional(text);
  const Container = z.object({ name: text, image: text });

  const MetadataSchema = z.object({
    name: text,
    namespace: text,
    generation: z._default(z.int(), 0),
    resourceVersion: z.string().check(z.minLength(1)),
    annotations: z.pipe(z.nullish(z.record(z.string(), text)), z.transform(emptyIfAbsent)),
    uid: optionalText,
    // Read by managed-fields.ts, which treats anything it cannot parse as "nobody on record".
    managedFields: z.optional(z.unknown()),
  });

  // Which pods are the workload's: listed by it to verify a rollout and to see a regression.
  const SelectorSchema = z.object({
    matchLabels: z.optional(z.record(z.string(), text)),
    matchExpressions: z.optional(
      z.array(z.object({ key: text, operator: text, values: z.nullish(z.array(text)) })),
    ),
  });

  const SpecSchema = z.object({
    replicas: count,
    selector: z.optional(SelectorSchema),
    paused: z.optional(z.boolean()),
    // Deployments call it `strategy`; only DaemonSet/StatefulSet `updateStrategy` matters to the rules.
    updateStrategy: z.optional(
      z.object({
        type: optionalText,
        rollingUpdate: z.nullish(z.object({ partition: count })),
      }),
    ),
    template: z.object({
      spec: z.object({ containers: z.array(Container), initContainers: z.optional(z.array(Container)) }),
    }),
  });

  const ConditionSchema = z.object({
    type: text,
    status: text,
    reason: optionalText,
    message: optionalText,
    // Go writes a zero metav1.Time as null; read only to tell one condition from another.
    lastUpdateTime: z.nullish(text),
    lastTransitionTime: z.nullish(text),
  });

  const StatusSchema = z._default(
    z.object({
      observedGeneration: count,
      replicas: count,
      updatedReplicas: count,
      readyReplicas: count,
      availableReplicas: count,
      currentReplicas: count,
      updateRevision: optionalText,
      currentRevision: optionalText,
      desiredNumberScheduled: count,
      updatedNumberScheduled: count,
      numberAvailable: count,
      conditions: z.optional(z.array(ConditionSchema)),
    }),
    {},
  );

  return z.object({ metadata: MetadataSchema, spec: SpecSchema, status: StatusSchema });
});

export type Workload = { kind: WorkloadKind } & z.output<ReturnType<typeof workloadSchema>>;

export class WorkloadParseError extends Error {
  override name = "WorkloadParseError";
}

/**
 * Parses an apps/v1 object of the expected kind. List items carry no `kind`, so the kind comes
 * from the caller; when the object does name one, it must match.
 */
export function parseWorkload(kind: WorkloadKind, raw: unknown): Workload {
  const declared = (raw as { kind?: unknown } | null)?.kind;
  if (declared !== undefined && declared !== kind) {
    // JSON.stringify, not String(): a `kind` that is an object with a non-function toString
    // would make String() throw a TypeError that tells the operator nothing.
    const shown = typeof declared === "string" ? declared : JSON.stringify(declared);
    throw new WorkloadParseError(`Cannot read ${kind}: the server returned a ${shown}`);
  }
  const parsed = parseChecked(checkWorkload, workloadSchema, raw);
  if (!parsed.ok) {
    const fields = parsed.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join("; ");
    throw new WorkloadParseError(`Cannot read ${kind}: unexpected object shape (${fields})`);
  }
  return { kind, ...parsed.value };
}

/**
 * Each container's image by name, init containers included, with its JSON-pointer path under the
 * kind's pod spec. kubectl set image walks init containers, then containers; a name in both is
 * ambiguous, and containers win because they are what the workload runs.
 */
export function containerImages(w: Workload): Map<string, { image: string; path: string }> {
  const spec = w.spec.template.spec;
  const at = WORKLOAD_KIND_TABLE[w.kind].podSpec;
  const out = new Map<string, { image: string; path: string }>();
  for (const [i, c] of (spec.initContainers ?? []).entries())
    out.set(c.name, { image: c.image, path: `${at}/initContainers/${i}` });
  for (const [i, c] of spec.containers.entries())
    out.set(c.name, { image: c.image, path: `${at}/containers/${i}` });
  return out;
}

/**
 * The JSON patch that sets container images by index, each guarded by a `test` of the name at
 * that index: a renamed or reordered container fails the patch instead of getting another
 * container's image (a strategic merge would append a new container instead).
 */
export function imagePatchOps(containers: ReadonlyArray<{ name: string; image: string; path: string }>) {
  return containers.flatMap((c) => [
    { op: "test", path: `${c.path}/name`, value: c.name },
    { op: "replace", path: `${c.path}/image`, value: c.image },
  ]);
}

/** `/apis/apps/v1/namespaces/<ns>/<plural>`; names are path-escaped even though DNS names need no escaping. */
export function collectionPath(ref: Pick<ObjectRef, "kind" | "namespace">): string {
  const { plural } = WORKLOAD_KIND_TABLE[ref.kind];
  return `${apiRootOf(ref.kind)}/namespaces/${encodeURIComponent(ref.namespace)}/${plural}`;
}

export function objectPath(ref: ObjectRef): string {
  return `${collectionPath(ref)}/${encodeURIComponent(ref.name)}`;
}
