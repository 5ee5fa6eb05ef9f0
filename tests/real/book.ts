// Where the product keeps its bookkeeping and where it posts its Events, in one place. Today
// both are the `state` workload: the counters and markers are its annotations under the
// prefix, and every Event is about it (plus the failed workload in the same namespace). When
// the bookkeeping moves into the product's own ConfigMap and Events onto the target workloads,
// only this file changes; the stories read the book and find Events through it.
import type { Story } from "./story.ts";

export const PREFIX = "image-refresh.io";

/** The product's bookkeeping entries, keyed without the prefix (e.g. `refresh-attempt-web`). */
export async function readBook(s: Story, state: string): Promise<Record<string, string>> {
  const o = await s.c.cp.admin.get(`/apis/apps/v1/namespaces/${s.ns}/deployments/${state}`);
  const a: Record<string, string> = o.metadata.annotations ?? {};
  return Object.fromEntries(
    Object.entries(a)
      .filter(([k]) => k.startsWith(`${PREFIX}/`))
      .map(([k, v]) => [k.slice(PREFIX.length + 1), v]),
  );
}

/** The object whose `kubectl events --for` shows the Events about `image` (today: the state object). */
export function eventSubject(_s: Story, state: string, _image: string): string {
  return `deployment/${state}`;
}
