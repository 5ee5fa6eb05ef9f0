// One real cluster for a test file: the control plane, the fake kubelet, the real kubectl as
// admin, a ServiceAccount token from `kubectl create token`, and the API server's audit log read
// back as the list of requests a user made. Stopped by the file's afterAll, the process exit
// hook, or the peers' hard limit, whichever comes first.
import { readFileSync } from "node:fs";
import { type ControlPlane, type StartOptions, startControlPlane } from "./control-plane.ts";
import { kubectl, ok, type Runner } from "./kubectl.ts";
import { type Kubelet, type KubeletOptions, startKubelet } from "./kubelet.ts";

export interface Cluster {
  cp: ControlPlane;
  kubelet: Kubelet;
  /** kubectl as admin. */
  kubectl: Runner;
  /** A token for namespace/name from `kubectl create token` (TokenRequest), and a kubeconfig with it. */
  serviceAccount(
    namespace: string,
    name: string,
  ): Promise<{ token: string; kubeconfig: string; user: string }>;
  /** The audit log's requests by `user` from line `since` on (see auditLength). */
  requests(user: string, since?: number): AuditEntry[];
  auditLength(): number;
  stop(): Promise<void>;
}

export interface AuditEntry {
  verb: string;
  requestURI: string;
  code: number;
  reason?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  apiGroup?: string;
}

function auditLines(path: string): string[] {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .filter((l) => l.startsWith("{"));
  } catch {
    return [];
  }
}

function entry(e: {
  verb: string;
  requestURI: string;
  responseStatus?: { code?: number; reason?: string };
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
}): AuditEntry {
  const o = e.objectRef ?? {};
  return {
    verb: e.verb,
    requestURI: e.requestURI,
    code: e.responseStatus?.code ?? 0,
    ...(e.responseStatus?.reason ? { reason: e.responseStatus.reason } : {}),
    ...o,
  };
}

export async function startCluster(opts: StartOptions & { kubelet?: KubeletOptions } = {}): Promise<Cluster> {
  const cp = await startControlPlane(opts);
  let kubelet: Kubelet | undefined;
  try {
    kubelet = await startKubelet(cp.admin, opts.kubelet);
  } catch (e) {
    await cp.stop();
    throw e;
  }
  const admin = kubectl(cp.adminKubeconfig, cp.dir);
  const k = kubelet;
  return {
    cp,
    kubelet: k,
    kubectl: admin,
    async serviceAccount(namespace, name) {
      const token = (
        await ok(admin(["create", "token", name, "-n", namespace, "--duration=2h"]), "kubectl create token")
      ).trim();
      return {
        token,
        kubeconfig: cp.kubeconfigFor(token, `${namespace}-${name}`),
        user: `system:serviceaccount:${namespace}:${name}`,
      };
    },
    auditLength: () => auditLines(cp.auditPath).length,
    requests(user, since = 0) {
      return auditLines(cp.auditPath)
        .slice(since)
        .map((l) => JSON.parse(l))
        .filter((e) => e.user?.username === user && e.stage === "ResponseComplete")
        .map(entry);
    },
    async stop() {
      await k.stop();
      await cp.stop();
    },
  };
}
