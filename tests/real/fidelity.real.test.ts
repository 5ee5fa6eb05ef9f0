// The fidelity report kept honest: the scripted sequence (fidelity-script.ts) against the
// simulated API server and the real one; every difference in status, Status reason,
// managedFields managers or watch event types must be listed in docs/fidelity.md as known, and
// every difference listed there must still be one. The real cluster runs with the watch cache
// off for Deployments so a compacted resourceVersion meets etcd's compaction, as the sim's
// compact() models it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type SimApiServer, startApiServer } from "../../sim/apiserver/index.ts";
import { apiClient } from "./api.ts";
import { type Cluster, startCluster } from "./cluster.ts";
import { compactEtcd } from "./etcd.ts";
import { NS, type Observation, runScript } from "./fidelity-script.ts";
import { ok } from "./kubectl.ts";
import { deployment, list, namespace } from "./manifests.ts";
import { needPeers } from "./peers.ts";

const missing = needPeers(["kube"], "tests/real/fidelity.real.test.ts");
const DOC = join(import.meta.dir, "..", "..", "docs", "fidelity.md");
const FIELDS = ["status", "reason", "managers", "annotations", "watch"] as const;

/** `step | field | simulator | real`, one line per difference. */
export function differences(sim: Observation[], real: Observation[]): string[] {
  const out: string[] = [];
  for (const [i, r] of real.entries()) {
    const s = sim[i] as Observation;
    for (const f of FIELDS) {
      const [a, b] = [String(s[f] ?? ""), String(r[f] ?? "")];
      if (a !== b) out.push(`${r.step} | ${f} | ${a} | ${b}`);
    }
  }
  return out;
}

/** The rows of the known-differences table in docs/fidelity.md, as `step | field | sim | real`. */
export function listed(doc: string): string[] {
  const table = doc.split("<!-- known differences -->")[1]?.split("<!-- end -->")[0] ?? "";
  return table
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("| step") && !l.startsWith("| ---"))
    .map((l) =>
      l
        .split("|")
        .slice(1, 5)
        .map((c) => c.trim().replace(/^`|`$/g, ""))
        .join(" | "),
    );
}

describe.skipIf(missing)("the simulator against the real API server", () => {
  let c: Cluster;
  let sim: SimApiServer;
  let real: Observation[];
  let simulated: Observation[];

  beforeAll(async () => {
    c = await startCluster({ apiserverArgs: ["--watch-cache-sizes=deployments.apps#0"] });
    const web = deployment(NS, "web", { image: "example.test/web:1" });
    // kubectl create: no last-applied annotation, as the sim's workloads have none.
    await ok(c.kubectl(["create", "-f", "-"], { stdin: list([namespace(NS), web]) }), "create");
    await ok(c.kubectl(["rollout", "status", "deployment/web", "-n", NS, "--timeout=60s"]), "rollout");
    real = await runScript({ api: c.cp.admin, compact: async () => void (await compactEtcd(c)) });
    sim = await startApiServer();
    sim.addWorkload({
      kind: "Deployment",
      namespace: NS,
      name: "web",
      containers: [{ name: "web", image: "example.test/web:1" }],
      manager: "kubectl-create",
    });
    await Bun.sleep(300);
    simulated = await runScript({
      api: apiClient(sim.url, sim.token, sim.caPem),
      compact: async () => sim.compact(),
    });
  }, 240_000);
  afterAll(async () => {
    await sim?.stop();
    await c?.stop();
  });

  test("the sequence ran through on both", () => {
    expect(simulated.map((o) => o.step)).toEqual(real.map((o) => o.step));
    // The whole comparison, for docs/fidelity.md: step | field: simulator / real.
    console.log(
      real
        .map(
          (r, i) =>
            `${r.step} | ${FIELDS.map((f) => `${simulated[i]?.[f] ?? ""} / ${r[f] ?? ""}`).join(" | ")}`,
        )
        .join("\n"),
    );
  });

  test("every difference is listed in docs/fidelity.md, and every listed one is still a difference", () => {
    const found = differences(simulated, real);
    const known = listed(readFileSync(DOC, "utf8"));
    expect({
      unlisted: found.filter((d) => !known.includes(d)),
      gone: known.filter((d) => !found.includes(d)),
    }).toEqual({ unlisted: [], gone: [] });
  });
});
