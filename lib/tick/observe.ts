// Observe: the reads of a tick, in one round: the store (image-refresh's own ConfigMap), every
// distinct target workload and, while migrating, the legacy `state` workload (usually a target
// already: one read serves both), all concurrently; and the registry, started as soon as what
// says whether it may be called at all is in (the store's registry-retry-after-<host>; while migrating
// also the legacy workload's), beside the target reads still in flight.
import type { Config } from "../config.ts";
import type { ConfigMapRef } from "../kube/configmaps.ts";
import { type EventSubject, eventSubject } from "../kube/events.ts";
import { type FieldOwner, ownersOf } from "../kube/managed-fields.ts";
import { containerImages } from "../kube/objects.ts";
import { type Pod, selectorText } from "../kube/pods.ts";
import { rolloutBlocked, rolloutStatus } from "../kube/settled.ts";
import type { KubeClient, Workload } from "../kube/workloads.ts";
import { registryHostKey } from "../registry/reference.ts";
import { type HostMemory, nothingResolved, registryGroups } from "../registry/registries.ts";
import { mark } from "../startup-timing.ts";
import type { Book } from "../state/book.ts";
import { bookWithLegacy, legacyAnnotations, migrationChange } from "../state/legacy.ts";
import { type RegistryBook, registryBook } from "../state/registries.ts";
import { readStore, type StoreRead } from "../state/store.ts";
import { describeConfigMap, describeWorkload, distinctTargets, stateRef } from "../workload.ts";
import type { TickContext } from "./context.ts";
import {
  type Observed,
  type ObservedDigest,
  type ObservedRegistry,
  type ObservedWorkload,
  type TickRead,
  type WorkloadRef,
  workloadId,
} from "./model.ts";

/** What observe read: what plan judges (`observed`), and what apply writes against (`read`). */
export interface Observation {
  observed: Observed;
  read: TickRead;
}

export { stateRef } from "../workload.ts";

/**
 * The tick's clock: the API server's `Date` on the store GET, one clock for every node.
 * IMF-fixdate only (RFC 9110 §5.6.7), whole seconds. Missing or unreadable (a proxy in front that
 * drops it): the local clock, said at warn when times are stored by it (`loud`), at debug otherwise.
 */
export function tickClock(date: string | null, ctx: Pick<TickContext, "now" | "log">, loud: boolean): number {
  const at = date === null ? Number.NaN : imfFixdate(date.trim());
  if (Number.isFinite(at)) return at;
  const local = Math.floor(ctx.now() / 1000) * 1000;
  const why = date === null ? "has no Date header" : `has an unreadable Date header ${JSON.stringify(date)}`;
  const line = `the API server's answer ${why}; using this node's clock for stored times`;
  ctx.log[loud ? "warn" : "debug"](line, { date: date ?? undefined });
  return local;
}

/**
 * The time an IMF-fixdate names, NaN for any other text. It is exactly what toUTCString writes,
 * so a date that reads back the same is one (weekday and calendar day included); a pattern
 * would cost a regex's first compilation on the way from the store's answer to the registry.
 */
function imfFixdate(text: string): number {
  const at = Date.parse(text);
  return Number.isFinite(at) && new Date(at).toUTCString() === text ? at : Number.NaN;
}

/** The store could not be read: `error` with reason store_unreadable; nothing is written. */
export class StoreUnreadable extends Error {
  override name = "StoreUnreadable";
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
  }
}

/** The workloads whose pods a tick lists (plan's regressionSuspects), given what it read so far. */
export type PodsToList = (o: Observed) => Array<{ ref: WorkloadRef; selector: string }>;

/**
 * `podsToList` is plan's choice, passed in so that observe imports nothing of plan: which
 * targets may have regressed is a rule, reading their pods is I/O.
 */
export async function observe(ctx: TickContext, podsToList?: PodsToList): Promise<Observation> {
  const c = ctx.config;
  const refs = distinctTargets(c, "unpinned");
  const legacyRef = stateRef(c);
  const all =
    legacyRef && !refs.some((r) => workloadId(r) === workloadId(legacyRef)) ? [...refs, legacyRef] : refs;
  const keys = c.images.map((i) => i.key);
  const storeRead = readStore(ctx.kube.configMaps, ctx.store, keys).catch((err: unknown) => {
    throw new StoreUnreadable(err);
  });
  const isLegacy = (r: WorkloadRef) => legacyRef !== undefined && workloadId(r) === workloadId(legacyRef);
  const workloadReads = all.map((ref) => readWorkload(ctx.kube, ref, isLegacy(ref)));
  const legacyRead = legacyRef ? workloadReads[all.findIndex(isLegacy)] : undefined;
  const early = startResolving(ctx, storeRead, legacyRef, legacyRead);
  const [store, ...reads] = await Promise.all([storeRead, ...workloadReads]);
  mark("reads-answered");
  const { legacy, book, clock, resolving } = await early;
  const objects = new Map<string, EventSubject>();
  const workloads: Record<string, ObservedWorkload> = {};
  all.forEach((ref, i) => {
    const r = reads[i] as WorkloadRead | Error;
    if (!(r instanceof Error)) objects.set(workloadId(ref), r.subject);
    if (refs.includes(ref))
      workloads[workloadId(ref)] = r instanceof Error ? { found: false, message: r.message } : r.observed;
  });
  const observed: Observed = { book, workloads, clock };
  // Beside the registry: the pods of a recorded build still inside its regressionWindow.
  const pods = podsToList ? suspectPods(ctx, podsToList(observed)) : Promise.resolve(undefined);
  const resolved = await resolving;
  mark("resolved");
  const listed = await pods;
  if (listed) observed.pods = listed;
  observed.digests = resolved.digests;
  observed.registries = resolved.registries;
  const migration = legacy ? migrationChange(store.book, legacy.input) : {};
  if (
    legacyRef &&
    store.book.resourceVersion !== undefined &&
    (!legacy || legacyAnnotations(legacy.input).length === 0)
  )
    ctx.log.warn(
      `state names ${describeWorkload(legacyRef)}, but its bookkeeping is in ${describeConfigMap(ctx.store)} now: remove state from the config`,
    );
  const read = { stored: store.book, judged: book, clock, migration, ...(legacy ? { legacy } : {}), objects };
  return { observed, read };
}

/**
 * What observe keeps of a workload it read: what plan judges, what an Event names and, of the
 * legacy `state` workload only, its annotations. The object itself is dropped as it arrives: kept
 * until the last of 500 reads and then for the tick's life, the answers were some 100 objects a
 * workload (managedFields most of them).
 */
interface WorkloadRead {
  observed: ObservedWorkload;
  subject: EventSubject;
  annotations?: Record<string, string>;
}

const readWorkload = (kube: KubeClient, ref: WorkloadRef, legacy: boolean): Promise<WorkloadRead | Error> =>
  kube.get(ref).then(
    (w) => ({
      observed: observeWorkload(w),
      subject: eventSubject(w),
      ...(legacy ? { annotations: w.metadata.annotations } : {}),
    }),
    (err: Error) => err,
  );

/**
 * The pods of every target, settled or not, that runs a build inside its regressionWindow: one
 * list per workload by its selector (the build's own pods are picked by their images, as the
 * verification does); a list that fails is kept as its error (no evidence, so the settled guard
 * judges the workload as before). Undefined when no target runs such a build.
 */
async function suspectPods(ctx: TickContext, suspects: ReturnType<PodsToList>): Promise<Observed["pods"]> {
  if (suspects.length === 0) return undefined;
  const lists = await Promise.all(
    suspects.map(({ ref, selector }) =>
      ctx.kube.pods.list(ref.namespace, selector).then(
        (l) => l.items,
        (err: Error) => {
          ctx.log.warn(`cannot list the pods of ${describeWorkload(ref)}: ${err.message}`, {
            workload: describeWorkload(ref),
          });
          return { error: err.message };
        },
      ),
    ),
  );
  return Object.fromEntries(
    suspects.map(({ ref }, i) => [workloadId(ref), lists[i] as Pod[] | { error: string }]),
  );
}

interface Early {
  legacy: TickRead["legacy"];
  book: Book;
  clock: number;
  resolving: Promise<Resolved>;
}

/**
 * The book, the clock and the registry's resolution, started once the store (and, while
 * migrating, the legacy workload) answered: nearly every tick needs the registry, so it runs
 * beside the other target reads. A store that cannot be read ends the tick before any registry
 * request. Every image that is not pinned is resolved, as before; one whose targets turn out
 * unsettled or unreadable is judged by the plan, which does not use its digest.
 */
function startResolving(
  ctx: TickContext,
  storeRead: Promise<StoreRead>,
  legacyRef: WorkloadRef | undefined,
  legacyRead: Promise<WorkloadRead | Error> | undefined,
): Promise<Early> {
  const early = Promise.all([storeRead, legacyRead]).then(([store, w]) => {
    mark("store-answered");
    const legacy = legacyOf(ctx.config, legacyRef, w instanceof Error ? undefined : w?.annotations);
    const book = legacy ? bookWithLegacy(store.book, legacy.input) : store.book;
    // Stored times (candidates, the registry's Retry-After) are by this clock: a missing Date is
    // said loudly when a minimumAge stores times by it.
    const clock = tickClock(store.date, ctx, ctx.config.minimumAgeMs > 0);
    const resolving = resolveImages(ctx, book, clock);
    // Awaited once the reads are in; until then a failure must not count as unhandled.
    resolving.catch(() => {});
    return { legacy, book, clock, resolving };
  });
  // The store's failure is the tick's, thrown by the reads' await; this copy of it is not.
  early.catch(() => {});
  return early;
}

/** The legacy state workload's annotations as the migration reader takes them; none when not read. */
function legacyOf(
  c: Config,
  ref: WorkloadRef | undefined,
  annotations: Record<string, string> | undefined,
): TickRead["legacy"] {
  if (!ref || !annotations) return undefined;
  const id = workloadId(ref);
  const images = c.images.map((i) => ({
    key: i.key,
    onStateWorkload: i.targets.some((t) => workloadId(t) === id),
  }));
  return { ref, annotations, input: { annotations, prefix: c.annotationPrefix, images } };
}

/**
 * A registry's stored Retry-After, when it is a time still ahead by the tick's clock: until
 * then no tick calls that registry. An unreadable value is ignored (the next 429's replaces it).
 */
export function registryNotBefore(stored: RegistryBook, clock: number): number | undefined {
  const f = stored.retryAfter;
  return f.kind === "trusted" && f.value > clock ? f.value : undefined;
}

type Resolved = { digests: Record<string, ObservedDigest>; registries: Record<string, ObservedRegistry> };

/**
 * Each image against its own registry. Per registry host, what the store holds for it (its
 * Retry-After and its API root's answer; the top-level registry's also under the version
 * before's keys) decides whether it is called and how.
 */
async function resolveImages(ctx: TickContext, book: Book, clock: number): Promise<Resolved> {
  const images = ctx.config.images.filter((i) => !i.pinned);
  const top = registryHostKey(ctx.config.registry.host);
  const memory: Record<string, HostMemory> = {};
  const registries: Record<string, ObservedRegistry> = {};
  for (const { hostKey } of registryGroups(images)) {
    const stored = registryBook(book, hostKey, hostKey === top);
    const until = registryNotBefore(stored, clock);
    // The registry client keeps this node's time: the stored time, moved by the clocks' difference.
    const notBefore = until === undefined ? undefined : new Date(ctx.now() + (until - clock));
    const storedAnswer = stored.challenge.kind === "absent" ? undefined : stored.challenge.raw;
    memory[hostKey] = { ...(notBefore ? { notBefore } : {}), ...(storedAnswer ? { storedAnswer } : {}) };
    registries[hostKey] = { held: until !== undefined };
  }
  const res = images.length ? await ctx.resolve(images, memory) : nothingResolved();
  for (const [hostKey, met] of res.hosts) {
    const seen = registries[hostKey] ?? { held: false };
    const delay = met.retryAfter?.delayMs;
    registries[hostKey] = {
      ...seen,
      ...(delay !== undefined ? { retryAfter: clock + delay } : {}),
      ...(met.remember !== undefined ? { remember: met.remember } : {}),
    };
  }
  const out: Record<string, ObservedDigest> = {};
  for (const img of images) {
    const r = res.digests.get(img.key);
    if (r?.ok) out[img.key] = { ok: true, digest: r.digest };
    // The registry client has warned with what to check; the verdict counts the streak.
    else
      out[img.key] = {
        ok: false,
        failure: r?.reason ?? "not_resolved",
        message: r?.message ?? "not resolved",
      };
  }
  return { digests: out, registries };
}

/** A target as the plan sees it: each container's image, who last changed it, its path, whether it settled. */
export function observeWorkload(w: Workload): ObservedWorkload {
  // A patch that can start no rollout would only fail the wait and count an attempt: it holds a
  // due refresh (verdict.ts), but the workload's images are still read.
  const blocked = rolloutBlocked(w);
  const status = rolloutStatus(w);
  const images: Record<string, string> = {};
  const owners: Record<string, FieldOwner[]> = {};
  const paths: Record<string, string> = {};
  const managed = ownersOf(w.metadata.managedFields);
  for (const [name, c] of containerImages(w)) {
    images[name] = c.image;
    paths[name] = c.path;
    const list = c.path.includes("/initContainers/") ? "initContainers" : "containers";
    owners[name] = managed.image(name, list);
  }
  // A workload that can start no rollout has no rollout to settle: the blocked rule holds it.
  const settled = { settled: status.done || !!blocked, settleMessage: status.error ?? status.message };
  const selector = w.spec.selector ? selectorText(w.spec.selector) : "";
  return {
    found: true,
    images,
    owners,
    paths,
    ...settled,
    ...(blocked ? { blocked } : {}),
    ...(selector ? { selector } : {}),
  };
}

export type { ConfigMapRef };
