// Waits for another writer's rollout to run to its end, as `helm upgrade --wait` or a human's
// `kubectl rollout status` would, so that the next tick meets a settled workload.
import { parseWorkload, type WorkloadKind } from "../lib/kube/objects.ts";
import { rolloutStatus } from "../lib/kube/settled.ts";
import type { SimApiServer } from "../sim/apiserver/index.ts";

export async function settled(
  api: SimApiServer,
  kind: WorkloadKind,
  ns: string,
  name: string,
): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (rolloutStatus(parseWorkload(kind, api.getObject(kind, ns, name))).done) return;
    await Bun.sleep(10);
  }
  throw new Error(`${kind} ${ns}/${name} did not settle after the change`);
}
