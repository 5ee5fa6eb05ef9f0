// Builds an events.k8s.io/v1 Event about the state object (reference §7.1). Pure: the clock and
// the random suffix come in as options so the output is table-testable.
import type { Workload } from "./objects.ts";

export const REPORTING_CONTROLLER = "image-refresh.io/image-refresh";

export interface EventInput {
  /** The object the Event is about; its uid and resourceVersion pin the exact version. */
  regarding: Pick<Workload, "kind" | "metadata">;
  type: "Normal" | "Warning";
  reason: string;
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

const MAX_NOTE = 1024; // validation limit of events.k8s.io/v1

export function buildEvent(input: EventInput, opts: EventOptions = {}) {
  const now = (opts.now ?? (() => new Date()))();
  const { name, namespace, uid, resourceVersion } = input.regarding.metadata;
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name: `${name}.${(opts.suffix ?? randomSuffix)()}`, namespace },
    eventTime: microTime(now),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: input.reportingInstance.slice(0, 128) || "image-refresh",
    action: input.action.slice(0, 128),
    reason: input.reason.slice(0, 128),
    type: input.type,
    note: input.note.length > MAX_NOTE ? `${input.note.slice(0, MAX_NOTE - 3)}...` : input.note,
    regarding: {
      apiVersion: "apps/v1",
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
