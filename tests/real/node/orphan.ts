// Run by node.real.test.ts as a process of its own, which the test then kills with SIGKILL: a
// cluster with a running pod whose test process died without a chance to stop anything. Prints
// the cluster's directory, cgroup name and network namespace once the pod is Ready.
import { ok } from "../kubectl.ts";
import { list, namespace } from "../manifests.ts";
import { startNodeCluster } from "./cluster.ts";
import { REGISTRY_HOST } from "./configs.ts";
import { serverDeployment } from "./workloads.ts";

const c = await startNodeCluster({ hardLimitS: 300 });
await c.images.server("orphan/app", "stable", { mode: "ready" });
const app = serverDeployment("orphan", "app", `${REGISTRY_HOST}/orphan/app:stable`);
await ok(c.kubectl(["apply", "-f", "-"], { stdin: list([namespace("orphan"), app]) }), "apply");
await ok(c.kubectl(["rollout", "status", "deployment/app", "-n", "orphan", "--timeout=90s"]), "rollout");
console.log(JSON.stringify({ dir: c.dir, name: c.name, netns: c.netns }));
await Bun.sleep(300_000);
