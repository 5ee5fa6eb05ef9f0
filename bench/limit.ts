// The limit: the least a no-op tick can do, written as plainly as possible. One GET of the state
// object, one token request naming every repository, one manifest HEAD per repository (8 in
// flight, as the product), then compare with the recorded digests. No config validation, no
// settled rules, no telemetry, no error handling beyond the exit code: whatever the product spends
// above this is its own overhead. The token realm is known in advance (an argument), which is
// why there is no challenge probe: a real client learns the realm from one.
//
// Usage: limit <plan.json>   (trust comes from NODE_EXTRA_CA_CERTS, as for the product)
import { readFileSync } from "node:fs";

export interface LimitPlan {
  apiUrl: string;
  apiToken: string;
  statePath: string;
  /** The bearer realm with `service` and one `scope` per repository already in the query. */
  tokenUrl: string;
  registryUrl: string;
  tag: string;
  prefix: string;
  images: Array<{ key: string; repository: string }>;
}

const ACCEPT = [
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
].join(", ");
const CONCURRENCY = 8;

async function main(plan: LimitPlan): Promise<number> {
  const state = await fetch(`${plan.apiUrl}${plan.statePath}`, {
    headers: { Authorization: `Bearer ${plan.apiToken}`, Accept: "application/json" },
  });
  if (!state.ok) return 1;
  const object = (await state.json()) as { metadata?: { annotations?: Record<string, string> } };
  const annotations = object.metadata?.annotations ?? {};
  const tokenRes = await fetch(plan.tokenUrl);
  if (!tokenRes.ok) return 1;
  const { token } = (await tokenRes.json()) as { token: string };
  let changed = 0;
  let next = 0;
  const worker = async () => {
    while (next < plan.images.length) {
      const img = plan.images[next++] as LimitPlan["images"][0];
      const res = await fetch(`${plan.registryUrl}/v2/${img.repository}/manifests/${plan.tag}`, {
        method: "HEAD",
        headers: { Authorization: `Bearer ${token}`, Accept: ACCEPT },
      });
      const digest = res.headers.get("docker-content-digest");
      if (digest !== annotations[`${plan.prefix}/last-refreshed-${img.key}-digest`]) changed++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, plan.images.length) }, worker));
  process.stdout.write(changed ? `changed ${changed}\n` : "noop\n");
  return 0;
}

// No top-level await: a --bytecode build is CommonJS, where it is not allowed. Import only the
// LimitPlan type from this file (type imports are erased), never its code.
const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: limit <plan.json>\n");
  process.exit(2);
}
main(JSON.parse(readFileSync(path, "utf8")) as LimitPlan).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`limit: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
