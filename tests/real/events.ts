// The Events the product left on the real server, read twice: from the events.k8s.io API and from
// the real `kubectl events -A -o json`. Fails unless kubectl shows each of them, about the same
// object, with the same type and reason.
import type { Cluster } from "./cluster.ts";
import { ok } from "./kubectl.ts";

interface EventLike {
  metadata: { name: string; namespace: string };
  type: string;
  reason: string;
  reportingController?: string;
  regarding?: { kind: string; name: string };
  involvedObject?: { kind: string; name: string };
}

export interface SeenEvent {
  type: string;
  reason: string;
  /** "namespace Kind/name" of the object it is about. */
  about: string;
}

const seen = (e: EventLike): SeenEvent => ({
  type: e.type,
  reason: e.reason,
  about: `${e.metadata.namespace} ${e.regarding?.kind ?? e.involvedObject?.kind}/${e.regarding?.name ?? e.involvedObject?.name}`,
});

export async function productEvents(
  c: Cluster,
  controller = "image-refresh.io/image-refresh",
): Promise<SeenEvent[]> {
  const held = (await c.cp.admin.get("/apis/events.k8s.io/v1/events")).items as EventLike[];
  const ours = held.filter((e) => e.reportingController === controller);
  const text = await ok(c.kubectl(["events", "-A", "-o", "json"]), "kubectl events");
  const shown = new Map((JSON.parse(text).items as EventLike[]).map((e) => [e.metadata.name, e]));
  for (const e of ours) {
    const k = shown.get(e.metadata.name);
    const [want, got] = [JSON.stringify(seen(e)), k ? JSON.stringify(seen(k)) : "nothing"];
    if (want !== got)
      throw new Error(`kubectl events shows ${got} for the Event ${e.metadata.name}, the API holds ${want}`);
  }
  return ours.map(seen);
}
