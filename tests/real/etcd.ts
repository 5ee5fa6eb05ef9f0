// etcd's own API (its JSON gateway on the client URL): the current revision and a compaction
// of all history before it, as the API server's periodic compaction does, so a watch from an
// older resourceVersion meets a real 410 Expired.
import type { Cluster } from "./cluster.ts";

async function call(c: Cluster, path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${c.cp.etcdUrl}${path}`, {
    method: "POST",
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const out = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`etcd ${path}: ${r.status} ${JSON.stringify(out)}`);
  return out;
}

/** Compacts etcd up to its current revision; returns that revision. */
export async function compactEtcd(c: Cluster): Promise<number> {
  // A range over an empty key answers with the header only; its revision is the current one.
  const status = await call(c, "/v3/kv/range", { key: Buffer.from("\0").toString("base64") });
  const revision = Number((status.header as { revision: string }).revision);
  await call(c, "/v3/kv/compaction", { revision: String(revision), physical: true });
  return revision;
}
