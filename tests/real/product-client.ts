// The product's own Kubernetes client (lib/kube), in-process, as admin against the real API
// server: for the stories that call the product's builders and waits directly.
import { createKubeClient, type KubeClient } from "../../lib/kube/workloads.ts";
import { memoryLogger } from "../../lib/log.ts";
import { noopTelemetry } from "../../lib/telemetry.ts";
import type { Cluster } from "./cluster.ts";

export function productClient(
  c: Cluster,
  opts: { server?: string; log?: ReturnType<typeof memoryLogger> } = {},
): KubeClient {
  return createKubeClient(
    {
      server: opts.server ?? c.cp.server,
      caPem: c.cp.caPem,
      insecureSkipTlsVerify: false,
      token: c.cp.admin.token,
    },
    {
      requestTimeoutMs: 10_000,
      signal: new AbortController().signal,
      telemetry: noopTelemetry(),
      log: opts.log ?? memoryLogger(),
    },
  );
}
