// Observe: the reads of a tick. One GET of the state object; the registry only when it is
// settled; the target workloads only when a refresh could actually start.
import { annotationKeys } from "../annotations.ts";
import type { Config } from "../config.ts";
import { type FieldOwner, ownersOf } from "../kube/managed-fields.ts";
import { containerImages } from "../kube/objects.ts";
import { rolloutBlocked, rolloutStatus } from "../kube/settled.ts";
import type { KubeClient, Workload } from "../kube/workloads.ts";
import { DigestResults } from "../registry/client.ts";
import { stateRef, type WorkloadRef, workloadId } from "../workload.ts";
import type { TickContext } from "./context.ts";
import type { Observed, ObservedDigest, ObservedWorkload } from "./model.ts";
import { targetsToRead } from "./plan/plan.ts";

export interface Observation {
  observed: Observed;
  state: Workload;
}

/**
 * Reads the state object. A Deployment's generation moves when its annotations change — our own
 * bookkeeping writes included — and until the controller observes that, kubectl's rules say "not
 * settled". That is a matter of milliseconds, so when it is the only reason we re-read briefly
 * rather than count a skip the tick caused itself.
 */
export async function readState(
  ctx: TickContext,
): Promise<{ state: Workload; status: ReturnType<typeof rolloutStatus>; date: string | null }> {
  const ref = stateRef(ctx.config);
  let { workload: state, date } = await ctx.kube.getDated(ref);
  let status = rolloutStatus(state);
  const graceUntil = ctx.now() + Math.min(2000, ctx.config.requestTimeoutMs);
  for (let wait = 50; !status.done && onlyUnobserved(state) && ctx.now() + wait <= graceUntil; wait *= 2) {
    await ctx.sleep(wait);
    ({ workload: state, date } = await ctx.kube.getDated(ref));
    status = rolloutStatus(state);
  }
  return { state, status, date };
}

/**
 * The tick's clock: the API server's `Date` on the state GET, one clock for every
 * node. IMF-fixdate only (RFC 9110 §5.6.7), whole seconds. Missing or unreadable (a proxy in
 * front that drops it): the local clock, said at warn when times are stored by it (`loud`, a
 * minimumAge), at debug otherwise.
 */
export function tickClock(date: string | null, ctx: Pick<TickContext, "now" | "log">, loud: boolean): number {
  const at = date !== null && IMF_FIXDATE.test(date.trim()) ? Date.parse(date) : Number.NaN;
  if (Number.isFinite(at)) return at;
  const local = Math.floor(ctx.now() / 1000) * 1000;
  const why = date === null ? "has no Date header" : `has an unreadable Date header ${JSON.stringify(date)}`;
  const line = `the API server's answer ${why}; using this node's clock for stored times`;
  ctx.log[loud ? "warn" : "debug"](line, { date: date ?? undefined });
  return local;
}

const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

function onlyUnobserved(w: Workload): boolean {
  return w.metadata.generation > (w.status.observedGeneration ?? 0);
}

/** The state object could not be read: outcome `error` with reason state_unreadable. */
export class StateUnreadable extends Error {
  override name = "StateUnreadable";
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
  }
}

export async function observe(ctx: TickContext): Promise<Observation> {
  const { state, status, date } = await readState(ctx).catch((err: unknown) => {
    throw new StateUnreadable(err);
  });
  const observed: Observed = {
    state: observeState(state, ctx.config, status.done, status.error ?? status.message),
  };
  // Only a minimumAge stores times by it; without one a missing Date is nothing to warn about.
  if (status.done) observed.clock = tickClock(date, ctx, ctx.config.minimumAgeMs > 0);
  if (!status.done) return { observed, state };
  const resolved = await resolveImages(ctx, state.metadata.annotations);
  observed.digests = resolved.digests;
  observed.registry = resolved.registry;
  const refs = targetsToRead(observed, ctx.config);
  if (refs.length > 0) {
    const workloads: Record<string, ObservedWorkload> = {};
    const stateId = workloadId(stateRef(ctx.config));
    // Each distinct workload once, concurrently; the state object is often a target too and was
    // read a moment ago, so it is not read again.
    const reads = await Promise.all(
      refs.map((ref) => readTarget(ctx.kube, ref, workloadId(ref) === stateId ? state : undefined)),
    );
    refs.forEach((ref, i) => {
      workloads[workloadId(ref)] = reads[i] as ObservedWorkload;
    });
    observed.workloads = workloads;
  }
  return { observed, state };
}

/**
 * The registry's stored Retry-After, when it is a time still ahead: until then no
 * tick calls that registry. An unreadable value is ignored (and replaced by the next 429's).
 */
export function registryNotBefore(
  annotations: Record<string, string>,
  prefix: string,
  now: number,
): Date | undefined {
  const raw = annotations[annotationKeys(prefix).retryAfter];
  const at = raw === undefined ? Number.NaN : Date.parse(raw);
  return Number.isFinite(at) && at > now ? new Date(at) : undefined;
}

async function resolveImages(
  ctx: TickContext,
  annotations: Record<string, string>,
): Promise<{ digests: Record<string, ObservedDigest>; registry: NonNullable<Observed["registry"]> }> {
  const images = ctx.config.images.filter((i) => !i.pinned);
  const repos = [...new Set(images.map((i) => i.repository))];
  const notBefore = registryNotBefore(annotations, ctx.config.annotationPrefix, ctx.now());
  const results: DigestResults = repos.length ? await ctx.resolve(repos, { notBefore }) : new DigestResults();
  const registry = { held: notBefore !== undefined, retryAfter: results.retryAfter?.at.toISOString() };
  const out: Record<string, ObservedDigest> = {};
  for (const img of images) {
    const r = results.get(img.repository);
    if (r?.ok) out[img.key] = { ok: true, digest: r.digest };
    else {
      // The registry client has warned with what to check; the verdict counts the streak.
      out[img.key] = {
        ok: false,
        failure: r?.reason ?? "not_resolved",
        message: r?.message ?? "not resolved",
      };
    }
  }
  return { digests: out, registry };
}

async function readTarget(kube: KubeClient, ref: WorkloadRef, known?: Workload): Promise<ObservedWorkload> {
  let w: Workload;
  try {
    w = known ?? (await kube.get(ref));
  } catch (err) {
    return { found: false, message: (err as Error).message };
  }
  return observeWorkload(w);
}

/** The state object as the plan sees it: its annotations, and who last wrote each recorded digest. */
export function observeState(
  state: Workload,
  c: Config,
  settled: boolean,
  settleMessage: string,
): Observed["state"] {
  const keys = annotationKeys(c.annotationPrefix);
  const owners = ownersOf(state.metadata.managedFields);
  const digestOwners: Record<string, FieldOwner[]> = {};
  for (const img of c.images) {
    const by = owners.annotation(keys.image(img.key).digest);
    if (by.length > 0) digestOwners[img.key] = by;
  }
  const out: Observed["state"] = { annotations: state.metadata.annotations, settled, settleMessage };
  return Object.keys(digestOwners).length > 0 ? { ...out, digestOwners } : out;
}

/** A target as the plan sees it: each container's image, who last changed it, and its path. */
export function observeWorkload(w: Workload): ObservedWorkload {
  // A patch that can start no rollout would only fail the wait and count an attempt: it holds a
  // due refresh (verdict.ts), but the workload's images are still read.
  const blocked = rolloutBlocked(w);
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
  return { found: true, images, owners, paths, ...(blocked ? { blocked } : {}) };
}
