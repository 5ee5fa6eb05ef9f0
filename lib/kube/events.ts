// Builds an events.k8s.io/v1 Event about the state object, within the limits the apiserver checks
// when one is created (kubernetes pkg/apis/core/validation/events.go; fields as kubernetes/api
// events/v1/types.go names them). Pure: the clock and the random suffix come in as options so the
// output is table-testable.
import { apiVersionOf, type WorkloadKind } from "../workload.ts";

export const REPORTING_CONTROLLER = "image-refresh.io/image-refresh";

/** Every Event reason image-refresh posts: a closed set, as alerting and `kubectl get events` key on it. */
export const EVENT_REASONS = [
  "Refreshed",
  "PinRestored",
  "Pinned",
  "RolloutFailed",
  "RolloutReverted",
  "RevertFailed",
  "BuildRegressed",
  "RefreshFrozen",
  "RefreshLockedOut",
  "RefreshPaused",
  "PinContested",
  "ImageStale",
  "BuildRejected",
  "BuildRefused",
] as const;
export type EventReason = (typeof EVENT_REASONS)[number];

/**
 * What an Event says of the object it is about: its uid and resourceVersion pin the exact version.
 * A tick keeps this of every workload it read, not the object: the rest of the answer (managedFields,
 * the pod template, the status) is what observe has already judged.
 */
export interface EventSubject {
  kind: WorkloadKind;
  metadata: { name: string; namespace: string; uid?: string; resourceVersion: string };
}

/** Only the fields an Event reads, copied, so that the object read can be collected. */
export function eventSubject(w: EventSubject): EventSubject {
  const { name, namespace, uid, resourceVersion } = w.metadata;
  return { kind: w.kind, metadata: { name, namespace, resourceVersion, ...(uid ? { uid } : {}) } };
}

export interface EventInput {
  regarding: EventSubject;
  type: "Normal" | "Warning";
  reason: EventReason;
  action: string;
  note: string;
  /** Identifies this process, e.g. the pod name (`HOSTNAME` in a CronJob pod). */
  reportingInstance: string;
}

export interface EventOptions {
  now?: () => Date;
  /** 16 hex digits; client-go uses the UnixNano time in hex, we add randomness against collisions. */
  suffix?: () => string;
}

// Validation limits of events.k8s.io/v1, in UTF-8 bytes: the apiserver measures with Go's len().
const MAX_NOTE = 1024;
const MAX_SHORT = 128;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * `s` cut to at most `max` UTF-8 bytes on a character boundary, "..." marking a cut. Encoded once,
 * at most `max` UTF-16 units of it: counting character by character cost a refresh of 200 images,
 * whose one note names them all, a thousand strings per Event and 9 MB of peak RSS over 500 Events.
 */
export function truncateUtf8(s: string, max: number): string {
  // A UTF-16 unit is 1 to 3 UTF-8 bytes: a short enough string fits without counting.
  if (s.length * 3 <= max) return s;
  // Only a prefix can be kept, and `max` units are at least `max` bytes.
  const bytes = utf8.encode(s.length > max ? s.slice(0, max) : s);
  if (s.length <= max && bytes.length <= max) return s;
  let cut = Math.max(max - 3, 0);
  // Back to the first byte of the character the cut falls in (continuation bytes are 10xxxxxx).
  while (cut > 0 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return `${fromUtf8.decode(bytes.subarray(0, cut))}...`;
}

export function buildEvent(input: EventInput, opts: EventOptions = {}) {
  const now = (opts.now ?? (() => new Date()))();
  const { name, namespace, uid, resourceVersion } = input.regarding.metadata;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${name}.${(opts.suffix ?? randomSuffix)()}`, namespace },
    eventTime: microTime(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: truncateUtf8(input.reportingInstance, MAX_SHORT) || "image-refresh",
    action: truncateUtf8(input.action, MAX_SHORT),
    reason: truncateUtf8(input.reason, MAX_SHORT),
    type: input.type,
    note: truncateUtf8(input.note, MAX_NOTE),
    regarding: {
      apiVersion: apiVersionOf(input.regarding.kind),
      kind: input.regarding.kind,
      namespace,
      name,
      ...(uid ? { uid } : {}),
      resourceVersion,
    },
  };
}

/** MicroTime: UTC with exactly six fractional digits, as the apiserver requires for eventTime. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function randomSuffix(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export interface PostOptions extends EventOptions {
  /** Where the Event is created when the object names no namespace. */
  namespace: string;
  log: {
    info(msg: string, f?: Record<string, unknown>): void;
    warn(msg: string, f?: Record<string, unknown>): void;
  };
  /** A dry run says what it would post and posts nothing. */
  dryRun?: boolean;
}

/**
 * Posts one Event. An Event is a notice, never the record: failing to post it is a WARNING and
 * the caller goes on.
 */
export async function postEvent(
  kube: { createEvent(namespace: string, event: unknown): Promise<void> },
  input: EventInput,
  opts: PostOptions,
): Promise<void> {
  if (opts.dryRun) {
    opts.log.info(`dry run: would post a ${input.type} Event ${input.reason}`, { note: input.note });
    return;
  }
  try {
    await kube.createEvent(input.regarding.metadata.namespace ?? opts.namespace, buildEvent(input, opts));
  } catch (err) {
    opts.log.warn(`cannot post the ${input.reason} Event; going on`, { error: (err as Error).message });
  }
}
