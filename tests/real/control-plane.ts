// A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver and kube-controller-manager
// built from peers/kube, with a CA and serving certificate made for the run, a ServiceAccount
// signing key (so TokenRequest, i.e. `kubectl create token`, works), an admin token, RBAC on,
// random free ports and a fresh etcd data directory. No scheduler and no kubelet: the fake
// kubelet (kubelet.ts) binds pods and writes their status.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateTls } from "../../sim/tls.ts";
import { type Api, apiClient } from "./api.ts";
import { peer } from "./peers.ts";
import { freePort, type Peer, spawnPeer, waitReady } from "./processes.ts";

export interface ControlPlane {
  dir: string;
  server: string;
  /** etcd's client URL (plain HTTP on 127.0.0.1), for stories that compact its history. */
  etcdUrl: string;
  caPem: string;
  caKeyPem: string;
  caPath: string;
  /** The API server's audit log (one JSON event per request, level Metadata). */
  auditPath: string;
  /** Admin (system:masters) client and its kubeconfig. */
  admin: Api;
  adminKubeconfig: string;
  /** A kubeconfig file for `token` (e.g. a ServiceAccount's from `kubectl create token`). */
  kubeconfigFor(token: string, name: string): string;
  peers: Peer[];
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Kill every peer after this long even if nobody stops them; default 30 minutes. */
  hardLimitS?: number;
  /** kube-controller-manager --controllers; default the ones the stories need. */
  controllers?: string[];
  /** More kube-apiserver flags, after the fixture's own (e.g. a watch cache size). */
  apiserverArgs?: string[];
}

// Names from cmd/kube-controller-manager/names/controller_names.go.
export const CONTROLLERS = [
  "deployment-controller",
  "replicaset-controller",
  "daemonset-controller",
  "statefulset-controller",
  "garbage-collector-controller",
  "serviceaccount-controller",
  "serviceaccount-token-controller",
  "namespace-controller",
  "job-controller",
  "cronjob-controller",
  "root-ca-certificate-publisher-controller",
];

const SERVICE_CIDR = "10.0.0.0/24";

export function kubeconfig(server: string, caPath: string, token: string, name: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "real", cluster: { server, "certificate-authority": caPath } }],
    users: [{ name, user: { token } }],
    contexts: [{ name, context: { cluster: "real", user: name } }],
    "current-context": name,
  });
}

/**
 * CA, serving pair, ServiceAccount key and the static token file, written into `dir`. `hosts` are
 * the serving certificate's names; `moreTokens` are further lines of the token file.
 */
export function writePki(
  dir: string,
  adminToken: string,
  opts: { hosts?: string[]; moreTokens?: string } = {},
) {
  const tls = generateTls({ hosts: opts.hosts ?? ["127.0.0.1", "localhost"] });
  const sa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const files = {
    ca: join(dir, "ca.crt"),
    cert: join(dir, "apiserver.crt"),
    key: join(dir, "apiserver.key"),
    sa: join(dir, "sa.key"),
    tokens: join(dir, "tokens.csv"),
    auditPolicy: join(dir, "audit-policy.yaml"),
    audit: join(dir, "audit.log"),
  };
  writeFileSync(files.ca, tls.caPem);
  writeFileSync(files.cert, tls.certPem);
  writeFileSync(files.key, tls.keyPem);
  writeFileSync(files.sa, sa.privateKey.export({ type: "pkcs1", format: "pem" }));
  // token,user,uid,"group1,group2" (the static token file's CSV)
  writeFileSync(files.tokens, `${adminToken},admin,admin-uid,"system:masters"\n${opts.moreTokens ?? ""}`);
  // Every request's user, verb, object and status code, so a story can assert that nothing
  // the product asked was forbidden (the log backend writes synchronously by default).
  writeFileSync(
    files.auditPolicy,
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules: [{level: Metadata}]\n",
  );
  return { tls, files };
}

async function startEtcd(dir: string, hardLimitS: number): Promise<{ peer: Peer; url: string }> {
  const [client, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const p = spawnPeer(
    "etcd",
    [
      peer("kube", "etcd"),
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
    ],
    { dir, hardLimitS },
  );
  await waitReady(
    p,
    async () => {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      return r.ok && ((await r.json()) as { health?: string }).health === "true";
    },
    30_000,
  );
  return { peer: p, url };
}

export function apiserverArgs(
  f: ReturnType<typeof writePki>["files"],
  etcd: string,
  port: number,
  address = "127.0.0.1",
): string[] {
  return [
    peer("kube", "kube-apiserver"),
    `--etcd-servers=${etcd}`,
    `--bind-address=${address}`,
    `--advertise-address=${address}`,
    `--secure-port=${port}`,
    `--tls-cert-file=${f.cert}`,
    `--tls-private-key-file=${f.key}`,
    `--client-ca-file=${f.ca}`,
    `--token-auth-file=${f.tokens}`,
    "--authorization-mode=Node,RBAC",
    "--service-account-issuer=https://kubernetes.default.svc",
    `--service-account-key-file=${f.sa}`,
    `--service-account-signing-key-file=${f.sa}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    "--allow-privileged=true",
    `--audit-policy-file=${f.auditPolicy}`,
    `--audit-log-path=${f.audit}`,
    "--v=1",
  ];
}

/** Starts etcd, kube-apiserver and kube-controller-manager; resolves once all three are ready. */
export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const hardLimitS = opts.hardLimitS ?? 1800;
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-real-"));
  const adminToken = randomBytes(24).toString("hex");
  const { tls, files } = writePki(dir, adminToken);
  const peers: Peer[] = [];
  const stop = async () => {
    for (const p of peers.reverse()) await p.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const etcd = await startEtcd(dir, hardLimitS);
    peers.push(etcd.peer);
    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    const apiserver = spawnPeer(
      "kube-apiserver",
      [...apiserverArgs(files, etcd.url, port), ...(opts.apiserverArgs ?? [])],
      {
        dir,
        hardLimitS,
      },
    );
    peers.push(apiserver);
    const admin = apiClient(server, adminToken, tls.caPem);
    await waitReady(apiserver, async () => (await admin.request("GET", "/readyz")).status === 200, 90_000);
    const kubeconfigFor = (token: string, name: string) => {
      const path = join(dir, `${name}.kubeconfig`);
      writeFileSync(path, kubeconfig(server, files.ca, token, name));
      return path;
    };
    const adminKubeconfig = kubeconfigFor(adminToken, "admin");
    peers.push(await startControllerManager(dir, { hardLimitS, files, adminKubeconfig, admin, opts }));
    return {
      dir,
      server,
      etcdUrl: etcd.url,
      caPem: tls.caPem,
      caKeyPem: tls.caKeyPem,
      caPath: files.ca,
      auditPath: files.audit,
      admin,
      adminKubeconfig,
      kubeconfigFor,
      peers,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function startControllerManager(
  dir: string,
  c: {
    hardLimitS: number;
    files: ReturnType<typeof writePki>["files"];
    adminKubeconfig: string;
    admin: Api;
    opts: StartOptions;
  },
): Promise<Peer> {
  const p = spawnPeer(
    "kube-controller-manager",
    [
      peer("kube", "kube-controller-manager"),
      `--kubeconfig=${c.adminKubeconfig}`,
      "--leader-elect=false",
      `--controllers=${(c.opts.controllers ?? CONTROLLERS).join(",")}`,
      `--service-account-private-key-file=${c.files.sa}`,
      `--root-ca-file=${c.files.ca}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // No serving port: nothing scrapes it, and two control planes must not fight over 10257.
      "--secure-port=0",
      "--v=1",
    ],
    { dir, hardLimitS: c.hardLimitS },
  );
  // Ready when the serviceaccount controller has made the default namespace's ServiceAccount,
  // which pod admission needs before any controller can create a pod.
  await waitReady(
    p,
    async () =>
      (await c.admin.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")).status === 200,
    60_000,
  );
  return p;
}
