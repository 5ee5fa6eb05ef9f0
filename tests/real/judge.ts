// The real kubectl's `rollout status --watch=false` verdict beside the product's own judgement
// (lib/kube/settled.ts) of the same object at the same resourceVersion: the object is read
// before and after kubectl runs, and a sample counts only when both reads agree.
import { objectPath, parseWorkload, type WorkloadKind } from "../../lib/kube/objects.ts";
import { rolloutStatus } from "../../lib/kube/settled.ts";
import type { Cluster } from "./cluster.ts";

export interface Verdicts {
  resourceVersion: string;
  kubectl: { code: number; said: string };
  product: { code: number; said: string };
}

/** Both verdicts on namespace/name, as kubectl prints them (the error on stderr, with `error: `). */
export async function verdicts(c: Cluster, kind: WorkloadKind, ns: string, name: string): Promise<Verdicts> {
  const path = objectPath({ kind, namespace: ns, name });
  for (let i = 0; i < 50; i++) {
    const before = await c.cp.admin.get(path);
    const k = await c.kubectl([
      "rollout",
      "status",
      `${kind.toLowerCase()}/${name}`,
      "-n",
      ns,
      "--watch=false",
    ]);
    const after = await c.cp.admin.get(path);
    if (before.metadata.resourceVersion !== after.metadata.resourceVersion) continue;
    const s = rolloutStatus(parseWorkload(kind, { ...after, kind }));
    return {
      resourceVersion: after.metadata.resourceVersion,
      kubectl: { code: k.code, said: (k.code === 0 ? k.out : k.err).trim() },
      product: s.error ? { code: 1, said: `error: ${s.error}` } : { code: 0, said: s.message },
    };
  }
  throw new Error(`Cannot judge ${kind} ${ns}/${name}: it changed under every one of 50 samples`);
}
