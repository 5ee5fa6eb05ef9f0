// Waits for a rollout the way `kubectl rollout status` does: LIST with the name field selector,
// judge, then WATCH from the list's resourceVersion, judging every ADDED/MODIFIED. Unlike kubectl
// it only counts a verdict once the controller has observed *our* patch's generation, never takes
// a progress deadline left over from before our patch for this rollout's verdict, and its
// deadline is absolute: a crash-looping rollout that keeps sending events never extends it, and
// the verdict at the deadline is taken from one fresh GET, not from the last event seen.
import { formatDuration } from "../duration.ts";
import type { Logger } from "../log.ts";
import type { Telemetry } from "../telemetry.ts";
import { describeWorkload, WORKLOAD_KIND_TABLE, workloadAttributes } from "../workload.ts";
import { ApiError } from "./errors.ts";
import { abortableSleep } from "./http.ts";
import { containerImages, type ObjectRef, parseWorkload, type Workload } from "./objects.ts";
import { pace } from "./pace.ts";
import { describeEvidence, podEvidence, podsRunning } from "./pod-evidence.ts";
import { watchPods } from "./pod-watch.ts";
import { deadlineExceeded, rolloutStatus } from "./settled.ts";
import type { KubeClient } from "./workloads.ts";

export type RolloutResult =
  | { ok: true; message: string }
  | {
      ok: false;
      reason: "deadline_exceeded" | "timeout" | "deleted" | "changed" | "crashed" | "unverified" | "error";
      message: string;
      /** What a pod showed against the build (crashed, unverified). */
      evidence?: string;
    };

export interface RolloutOptions {
  /** metadata.generation from the PATCH response: the spec the controller must have observed. */
  afterGeneration: number;
  /**
   * The object as that PATCH left it (its response): a progress deadline it already carried was
   * an earlier rollout's and is no verdict on this one (settled.ts, deadlineExceeded).
   */
  written?: Workload;
  /**
   * The images our patch set, by container name. A rollout that settles on other images (a
   * human's `kubectl rollout undo` during the wait) is not ours: it ends as `changed`.
   */
  expectImages?: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  telemetry: Telemetry;
  log: Logger;
  /** Pause before re-listing after a transient failure. */
  retryDelayMs?: number;
  /** Upper bound of one watch request's timeoutSeconds; the server then ends it cleanly. */
  maxWatchSeconds?: number;
  /**
   * Least time between the starts of two watches, and of two lists: a proxy that answers a watch
   * with an empty 200, or a server that answers every watch 410 Expired, would otherwise be
   * asked again in a tight loop until the deadline. Default 1000, as client-go's RetryWatcher
   * waits at least a second between restarts.
   */
  minWatchIntervalMs?: number;
  /**
   * The workload's pods (its selector): the wait fails as soon as a container of a pod running
   * `expectImages` restarts or waits in CrashLoopBackOff, ImagePullBackOff or ErrImagePull,
   * instead of waiting out the deadline for a build that crashes.
   */
  podSelector?: string;
}

/** How long past its timeoutSeconds a watch may stay silent before we end it ourselves. */
function watchdogMs(timeoutSeconds: number): number {
  return (timeoutSeconds + Math.max(2, Math.ceil(timeoutSeconds / 10))) * 1000;
}

export function waitForRollout(
  client: KubeClient,
  ref: ObjectRef,
  opts: RolloutOptions,
): Promise<RolloutResult> {
  const attributes = workloadAttributes(ref);
  return opts.telemetry.span("rollout.wait", { kind: "internal", attributes }, async (span) => {
    const deadline = AbortSignal.timeout(opts.timeoutMs);
    const crashed = new AbortController();
    const signal = AbortSignal.any([opts.signal, deadline, crashed.signal]);
    const waiter = new Waiter(client, ref, { ...opts, signal });
    const settledOrStopped = new AbortController();
    const crash = watchForCrash(client, ref, opts, AbortSignal.any([signal, settledOrStopped.signal]));
    void crash.then((e) => e && crashed.abort());
    let result = await waiter.run().catch((e: unknown) => waiter.failure(e, deadline));
    settledOrStopped.abort();
    const evidence = await crash;
    // A rollout that settled wins over a crash seen in the same moment: the verification judges it.
    if (!result.ok && evidence) result = { ok: false, reason: "crashed", message: evidence, evidence };
    // Only the deadline re-reads: the tick's own signal (SIGTERM) ends the wait at once.
    else if (!result.ok && result.reason === "timeout" && !opts.signal.aborted)
      result = await waiter.atDeadline(opts.signal);
    span.setAttributes({ "image_refresh.rollout.result": result.ok ? "ok" : result.reason });
    if (!result.ok) span.setError(result.reason, result.message);
    return result;
  });
}

type Step = { result: RolloutResult } | { relist: true } | { eof: string };

/**
 * Watches the pods running the expected images for a crash or a failed pull; resolves with what
 * one showed, or undefined once `signal` ends the watch. Pods that cannot be read leave the wait
 * to kubectl's rules alone (a WARNING): a missing grant is no verdict on the build.
 */
async function watchForCrash(
  client: KubeClient,
  ref: ObjectRef,
  opts: RolloutOptions,
  signal: AbortSignal,
): Promise<string | undefined> {
  const images = opts.expectImages;
  if (!opts.podSelector || !images || Object.keys(images).length === 0) return undefined;
  try {
    const found = await watchPods(client.pods, {
      namespace: ref.namespace,
      labelSelector: opts.podSelector,
      signal,
      log: opts.log,
      minWatchIntervalMs: opts.minWatchIntervalMs,
      judge: (pods) => podEvidence(podsRunning(pods, images), { unready: "none" }),
    });
    return found && `${describeWorkload(ref)}: ${describeEvidence(ref.namespace, found)}`;
  } catch (e) {
    opts.log.warn(`cannot watch the pods of ${describeWorkload(ref)}: ${(e as Error).message}`, {
      workload: describeWorkload(ref),
    });
    return undefined;
  }
}

class Waiter {
  private lastMessage = "";
  private readonly started = Date.now();
  /** When the last list and the last watch began: each is paced by minWatchIntervalMs. */
  private lastList = Number.NEGATIVE_INFINITY;
  private lastWatch = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly client: KubeClient,
    private readonly ref: ObjectRef,
    private readonly opts: RolloutOptions,
  ) {}

  async run(): Promise<RolloutResult> {
    for (;;) {
      try {
        this.lastList = await pace(this.lastList, this.opts);
        const listed = await untilAborted(this.client.list(this.ref), this.opts.signal);
        const first = listed.items[0];
        if (!first) return this.deleted();
        const verdict = this.judge(first);
        if (verdict) return verdict;
        const step = await this.watchFrom(listed.resourceVersion);
        if ("result" in step) return step.result;
      } catch (e) {
        if (this.opts.signal.aborted || !(e instanceof ApiError) || !(e.transient || e.code === 410)) throw e;
        this.opts.log.debug(`re-listing ${describeWorkload(this.ref)} after ${e.reason}`, { code: e.code });
        if (e.code !== 410) await abortableSleep(this.opts.retryDelayMs ?? 1000, this.opts.signal);
      }
    }
  }

  /** Watches from `rv`, reconnecting on clean EOF from the last version seen, at a bounded rate. */
  private async watchFrom(rv: string): Promise<Step> {
    for (;;) {
      this.lastWatch = await pace(this.lastWatch, this.opts);
      const step = await this.watchOnce(rv).catch((e: unknown) => this.garbled(e));
      if (!("eof" in step)) return step;
      rv = step.eof;
    }
  }

  /**
   * Garbage in a watch stream (a proxy cutting a line, an object that does not parse) says
   * nothing about the rollout, and the list is validated: re-list after a pause, as kubectl's
   * reflector does, instead of failing a rollout that may be fine and counting an attempt for it.
   */
  private garbled(e: unknown): Promise<Step> {
    if (e instanceof ApiError && e.reason === "MalformedResponse" && !this.opts.signal.aborted)
      return this.watchError({ code: e.code, reason: e.reason });
    throw e;
  }

  /**
   * One watch. The server ends it after timeoutSeconds; a connection that went half-open (a NAT
   * or load balancer dropping it without a reset) never ends, so a watchdog does, and the wait
   * re-lists instead of sitting blind until the rollout deadline.
   */
  private async watchOnce(rv: string): Promise<Step> {
    const remaining = Math.ceil((this.opts.timeoutMs - (Date.now() - this.started)) / 1000);
    const timeoutSeconds = Math.max(1, Math.min(remaining, this.opts.maxWatchSeconds ?? 300));
    const watchdog = AbortSignal.timeout(watchdogMs(timeoutSeconds));
    try {
      return await this.readWatch(rv, timeoutSeconds, AbortSignal.any([this.opts.signal, watchdog]));
    } catch (e) {
      if (!watchdog.aborted || this.opts.signal.aborted) throw e;
      this.opts.log.debug(`watch of ${describeWorkload(this.ref)} silent past its timeout; re-listing`, {
        timeout_seconds: timeoutSeconds,
      });
      return { relist: true };
    }
  }

  private async readWatch(rv: string, timeoutSeconds: number, signal: AbortSignal): Promise<Step> {
    const events = this.client.watch(this.ref, { resourceVersion: rv, timeoutSeconds, signal });
    for await (const ev of events) {
      if (ev.type === "ADDED" || ev.type === "MODIFIED") {
        const w = this.parse(ev.object);
        rv = w.metadata.resourceVersion;
        const verdict = this.judge(w);
        if (verdict) return { result: verdict };
      } else if (ev.type === "BOOKMARK") {
        rv = bookmarkVersion(ev.object) ?? rv;
      } else if (ev.type === "DELETED") {
        return { result: this.deleted() };
      } else if (ev.type === "ERROR") {
        return this.watchError(ev.object);
      } else {
        return { result: { ok: false, reason: "error", message: `unexpected watch event ${ev.type}` } };
      }
    }
    return { eof: rv };
  }

  /** 410 Expired (history compacted) re-lists as soon as lists are paced to; other in-stream errors after a pause. */
  private async watchError(object: unknown): Promise<Step> {
    const s = (object ?? {}) as { code?: unknown; reason?: unknown; message?: unknown };
    this.opts.log.debug(`watch of ${describeWorkload(this.ref)} ended with an error event`, {
      code: s.code,
      reason: s.reason,
    });
    if (s.code !== 410) await abortableSleep(this.opts.retryDelayMs ?? 1000, this.opts.signal);
    return { relist: true };
  }

  /** Undefined while the rollout is in progress; a result once it is decided. */
  private judge(w: Workload): RolloutResult | undefined {
    const observed = w.status.observedGeneration ?? 0;
    const status =
      observed < this.opts.afterGeneration
        ? {
            done: false,
            message: `Waiting for ${WORKLOAD_KIND_TABLE[w.kind].rolloutNoun} spec update to be observed...`,
          }
        : rolloutStatus(w, this.opts.written);
    if (status.message !== this.lastMessage) {
      this.lastMessage = status.message;
      this.opts.log.info(status.message, { workload: describeWorkload(this.ref) });
    }
    if ("error" in status && status.error) {
      const deadline = deadlineExceeded(w, this.opts.written);
      return { ok: false, reason: deadline ? "deadline_exceeded" : "error", message: status.error };
    }
    if (!status.done) return undefined;
    const foreign = this.foreignImage(w);
    return foreign
      ? { ok: false, reason: "changed", message: foreign }
      : { ok: true, message: status.message };
  }

  /** Says which expected container settled on another image, if one did. */
  private foreignImage(w: Workload): string | undefined {
    const live = containerImages(w);
    for (const [name, image] of Object.entries(this.opts.expectImages ?? {})) {
      const now = live.get(name)?.image;
      if (now !== image)
        return `${describeWorkload(this.ref)} settled, but container ${name} runs ${now ?? "nothing"}, not ${image}: the workload was changed by someone else during the rollout`;
    }
    return undefined;
  }

  private parse(object: unknown): Workload {
    try {
      return parseWorkload(this.ref.kind, object);
    } catch (e) {
      throw new ApiError({
        method: "GET",
        url: "",
        target: describeWorkload(this.ref),
        code: 0,
        reason: "MalformedResponse",
        statusMessage: (e as Error).message,
        cause: e,
      });
    }
  }

  private deleted(): RolloutResult {
    return { ok: false, reason: "deleted", message: `${describeWorkload(this.ref)} has been deleted` };
  }

  /**
   * The verdict at the deadline comes from a fresh read, not from the last observation: a watch
   * that never delivers an event (a proxy buffering chunked responses) leaves that observation
   * as old as the LIST taken right after the patch, and a rollout that settled a moment later
   * would be failed from it, an attempt counted against a healthy workload. One GET, bounded by
   * the client's request timeout, judged by the same rules; `tick` (SIGTERM) still cuts it short.
   * A read that fails keeps the timeout and says why.
   */
  async atDeadline(tick: AbortSignal): Promise<RolloutResult> {
    let w: Workload;
    try {
      w = await untilAborted(this.client.get(this.ref), tick);
    } catch (e) {
      const why = tick.aborted ? "the tick was stopped" : ((e as Error).message ?? String(e));
      return this.timedOut(`; re-reading it at the deadline failed: ${why}`);
    }
    return this.judge(w) ?? this.timedOut();
  }

  private timedOut(suffix = ""): RolloutResult {
    const last = this.lastMessage ? `: ${this.lastMessage}` : "";
    return {
      ok: false,
      reason: "timeout",
      message: `timed out after ${formatDuration(this.opts.timeoutMs)} waiting for ${describeWorkload(this.ref)}${last}${suffix}`,
    };
  }

  failure(e: unknown, deadline: AbortSignal): RolloutResult {
    const last = this.lastMessage ? `: ${this.lastMessage}` : "";
    if (deadline.aborted) return this.timedOut();
    if (this.opts.signal.aborted)
      return {
        ok: false,
        reason: "error",
        message: `wait for ${describeWorkload(this.ref)} cancelled${last}`,
      };
    return { ok: false, reason: "error", message: (e as Error).message ?? String(e) };
  }
}

function bookmarkVersion(object: unknown): string | undefined {
  const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === "string" && rv !== "" ? rv : undefined;
}

/** Lets the absolute deadline cut a request short instead of waiting out its own timeout. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
