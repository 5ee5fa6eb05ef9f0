// Where the product keeps its bookkeeping and where it posts its Events, in one place. The
// counters and markers are the `data` of the product's own ConfigMap (the store), and every
// Event is about the workloads it concerns: an image's targets (in a story, the Deployment named
// like the repository). The stories read the book and find Events through this file only.
import type { Story } from "./story.ts";

/** The store's entries (e.g. `refresh-attempt-web`); empty while the store does not exist. */
export async function readBook(s: Story, store: string): Promise<Record<string, string>> {
  const r = await s.c.cp.admin.request("GET", `/api/v1/namespaces/${s.ns}/configmaps/${store}`);
  if (r.status === 404) return {};
  if (r.status !== 200) throw new Error(`GET the store ${s.ns}/${store}: ${r.status}`);
  return (r.body as { data?: Record<string, string> }).data ?? {};
}

/** The object whose `kubectl events --for` shows the Events about `image`: its target. */
export function eventSubject(_s: Story, _store: string, image: string): string {
  return `deployment/${image}`;
}
