// The real kube-state-metrics (peers/ksm, built by peers/build.sh into the peers cache keyed by its
// go.sum) run against the real control plane: CronJobs and Jobs of the image-refresh namespace,
// its metrics and its own telemetry on free 127.0.0.1 ports. Stops with the control plane's
// peers (the same watchdog: it ends when the test process is gone, or after the hard limit).
import { peer } from "../peers.ts";
import { freePort, type Peer, spawnPeer, waitReady } from "../processes.ts";

export interface Ksm {
  /** host:port of /metrics, the target Prometheus scrapes as job="kube-state-metrics". */
  target: string;
  metrics(): Promise<string>;
  peer: Peer;
}

/** kube-state-metrics watching `namespace`'s CronJobs and Jobs with `kubeconfig` (the admin's). */
export async function startKsm(kubeconfig: string, dir: string, namespace: string): Promise<Ksm> {
  const [port, telemetry] = [await freePort(), await freePort()];
  const p = spawnPeer(
    "kube-state-metrics",
    [
      peer("ksm", "kube-state-metrics"),
      `--kubeconfig=${kubeconfig}`,
      "--host=127.0.0.1",
      `--port=${port}`,
      "--telemetry-host=127.0.0.1",
      `--telemetry-port=${telemetry}`,
      "--resources=cronjobs,jobs",
      `--namespaces=${namespace}`,
    ],
    { dir, hardLimitS: 900 },
  );
  const target = `127.0.0.1:${port}`;
  const metrics = () => fetch(`http://${target}/metrics`).then((r) => r.text());
  // Ready once its informers have listed: the CronJob family is exposed (its HELP line at least).
  await waitReady(p, async () => (await metrics()).includes("kube_cronjob_created"), 60_000);
  return { target, metrics, peer: p };
}
