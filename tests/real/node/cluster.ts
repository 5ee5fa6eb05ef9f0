// A real single-node cluster in a network namespace of its own: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and the registry as the control plane's peers do, plus
// the node (containerd, kube-proxy and a real kubelet, node.sh). Every server binds 127.0.0.1 or
// the node's documentation-range address inside that namespace; the test reaches the API server
// and the registry through forward.ts. Every process runs under the real tier's watchdog, so a
// test process that dies (even by SIGKILL) takes the cluster with it; node.sh tears the node's
// containers and cgroups down on the way out, and the namespace vanishes with its last process.
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Api, apiClient } from "../api.ts";
import { apiserverArgs, CONTROLLERS, kubeconfig, writePki } from "../control-plane.ts";
import { kubectl, type Runner } from "../kubectl.ts";
import { peer } from "../peers.ts";
import { type Peer, spawnPeer, tail, waitReady } from "../processes.ts";
import {
  APISERVER_PORT,
  KUBERNETES_SERVICE_IP,
  type KubeletTuning,
  NODE_IP,
  NODE_NAME,
  PAUSE_IMAGE,
  REGISTRY_HOST,
  writeNodeConfigs,
} from "./configs.ts";
import { forwardFromHost } from "./forward.ts";
import { type Images, images } from "./images.ts";

export interface NodeCluster {
  dir: string;
  /** The cgroup directory name (under every hierarchy) and the veth prefix of this cluster. */
  name: string;
  /** The cluster's network namespace, as /proc/<pid>/ns/net reads ("net:[...]"). */
  netns: string;
  caPem: string;
  caPath: string;
  /** Admin client and kubeconfig, reaching the API server from the test's side. */
  admin: Api;
  adminKubeconfig: string;
  kubectl: Runner;
  images: Images;
  peers: Peer[];
  /** Milliseconds from start to a Ready node with its default ServiceAccount. */
  startedInMs: number;
  stop(): Promise<void>;
}

export interface NodeClusterOptions extends KubeletTuning {
  hardLimitS?: number;
}

const HERE = import.meta.dir;
const NODE_CONTROLLERS = [
  ...CONTROLLERS,
  "node-lifecycle-controller",
  "pod-garbage-collector-controller",
  "ttl-after-finished-controller",
];

// The namespace's holder: lo, and a veth pair whose one end carries the node's address. Nothing
// routes out. It writes its pid, then sleeps until the watchdog stops it.
const HOLDER = `set -e; echo $$ > "$1/netns.pid"; ip link set lo up
ip link add "$2a" type veth peer name "$2b"; ip addr add "$3/32" dev "$2a"
ip link set "$2b" up; ip link set "$2a" up; touch "$1/netns.up"; exec sleep 2147483647`;

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number, log?: Peer) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await Promise.resolve(ok()).catch(() => false)) return;
    await Bun.sleep(100);
  }
  throw new Error(`${what} within ${ms} ms${log ? `:\n${tail(log)}` : ""}`);
}

function layout(): { dir: string; name: string } {
  const dir = mkdtempSync(join(tmpdir(), "image-refresh-node-"));
  for (const d of ["cni/net.d", "cni/ipam", "kubelet", "sysctl", "registry", "logs"])
    mkdirSync(join(dir, d), { recursive: true });
  return { dir, name: `irn${randomBytes(3).toString("hex")}` };
}

export async function startNodeCluster(opts: NodeClusterOptions = {}): Promise<NodeCluster> {
  const t0 = Date.now();
  const hardLimitS = opts.hardLimitS ?? 1800;
  const { dir, name } = layout();
  const logs = join(dir, "logs");
  const peers: Peer[] = [];
  const closers: Array<() => void> = [];
  const spawn = (p: string, argv: string[]) => {
    const s = spawnPeer(p, argv, { dir: logs, hardLimitS });
    peers.push(s);
    return s;
  };
  let node: Peer | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (node) {
      await node.stop();
      await until("the node's teardown", () => existsSync(join(dir, "node.down")), 60_000).catch(() => {});
    }
    for (const p of [...peers].reverse()) await p.stop();
    for (const c of closers) c();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const holder = spawn("netns", ["unshare", "--net", "sh", "-c", HOLDER, "holder", dir, name, NODE_IP]);
    await until("the network namespace", () => existsSync(join(dir, "netns.up")), 10_000, holder);
    const nsPath = `/proc/${readFileSync(join(dir, "netns.pid"), "utf8").trim()}/ns/net`;
    const netns = readlinkSync(nsPath);
    const IN = ["nsenter", `--net=${nsPath}`];

    const adminToken = randomBytes(24).toString("hex");
    const nodeToken = randomBytes(24).toString("hex");
    const { tls, files } = writePki(dir, adminToken, {
      hosts: ["127.0.0.1", "localhost", NODE_IP, KUBERNETES_SERVICE_IP, "kubernetes.default.svc"],
      moreTokens: `${nodeToken},system:node:${NODE_NAME},node-uid,"system:nodes"\n`,
    });
    const inside = `https://${NODE_IP}:${APISERVER_PORT}`;
    const write = (file: string, server: string, token: string, user: string) => {
      writeFileSync(join(dir, file), kubeconfig(server, files.ca, token, user));
      return join(dir, file);
    };
    const insideAdmin = write("admin-inside.kubeconfig", inside, adminToken, "admin");
    const nodeKubeconfig = write("node.kubeconfig", inside, nodeToken, `system:node:${NODE_NAME}`);
    const cfg = writeNodeConfigs(dir, { cgroupRoot: name, adminKubeconfig: insideAdmin, ...opts });

    const fwd = spawn("forward", [
      ...IN,
      process.execPath,
      join(HERE, "forward.ts"),
      `${dir}/api.sock=${NODE_IP}:${APISERVER_PORT}`,
      `${dir}/registry.sock=${REGISTRY_HOST}`,
    ]);
    await until("the forwarder", () => existsSync(join(dir, "registry.sock")), 10_000, fwd);
    const api = await forwardFromHost(join(dir, "api.sock"));
    const reg = await forwardFromHost(join(dir, "registry.sock"));
    closers.push(api.close, reg.close);

    spawn("etcd", [...IN, ...etcdArgs(dir)]);
    const registry = spawn("registry", [...IN, "docker-registry", "serve", cfg.registry]);
    const server = `https://127.0.0.1:${api.port}`;
    const admin = apiClient(server, adminToken, tls.caPem);
    const apiserver = spawn("kube-apiserver", [
      ...IN,
      ...apiserverArgs(files, "http://127.0.0.1:2379", APISERVER_PORT, NODE_IP),
      // kubectl logs/exec reach the kubelet by the node's address, never the host's DNS.
      "--kubelet-preferred-address-types=InternalIP",
      "--enable-admission-plugins=NodeRestriction",
    ]);
    await waitReady(apiserver, async () => (await admin.request("GET", "/readyz")).status === 200, 90_000);
    spawn("kube-controller-manager", [...IN, ...controllerManagerArgs(insideAdmin, files)]);
    spawn("kube-scheduler", [...IN, ...schedulerArgs(insideAdmin)]);

    const pushHost = `127.0.0.1:${reg.port}`;
    await waitReady(registry, async () => (await fetch(`http://${pushHost}/v2/`)).status === 200, 20_000);
    const imgs = images(pushHost, dir);
    closers.push(imgs.remove);
    await imgs.pause(peer("node", "pause"), PAUSE_IMAGE);

    node = spawnPeer(
      "node",
      [
        ...IN,
        ...["unshare", "--mount", "--propagation", "private", "sh", join(HERE, "node.sh"), dir, name],
        ...[peer("node", "kubelet"), peer("node", "kube-proxy"), nodeKubeconfig, NODE_NAME, NODE_IP],
        String(process.pid),
      ],
      { dir: logs, hardLimitS },
    );
    const nodePeer = node;
    // Fails at once, with node.sh's words, if the node exits; the kubelet's log says the rest.
    await waitReady(nodePeer, () => nodeReady(admin), 90_000).catch((e: Error) => {
      throw new Error(`${e.message}\nkubelet.log:\n${tail({ ...nodePeer, log: join(dir, "kubelet.log") })}`);
    });
    await until(
      "the default ServiceAccount",
      async () =>
        (await admin.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")).status === 200,
      30_000,
    );
    const adminKubeconfig = write("admin.kubeconfig", server, adminToken, "admin");
    return {
      dir,
      name,
      netns,
      caPem: tls.caPem,
      caPath: files.ca,
      admin,
      adminKubeconfig,
      kubectl: kubectl(adminKubeconfig, dir),
      images: imgs,
      peers,
      startedInMs: Date.now() - t0,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function nodeReady(admin: Api): Promise<boolean> {
  const r = await admin.request("GET", `/api/v1/nodes/${NODE_NAME}`);
  const conditions: Array<{ type: string; status: string }> = r.body?.status?.conditions ?? [];
  return r.status === 200 && conditions.some((c) => c.type === "Ready" && c.status === "True");
}

function etcdArgs(dir: string): string[] {
  return [
    peer("kube", "etcd"),
    `--data-dir=${join(dir, "etcd")}`,
    "--listen-client-urls=http://127.0.0.1:2379",
    "--advertise-client-urls=http://127.0.0.1:2379",
    "--listen-peer-urls=http://127.0.0.1:2380",
    "--initial-advertise-peer-urls=http://127.0.0.1:2380",
    "--initial-cluster=default=http://127.0.0.1:2380",
    "--unsafe-no-fsync",
    "--log-level=warn",
  ];
}

function controllerManagerArgs(kubeconfigPath: string, files: { sa: string; ca: string }): string[] {
  return [
    peer("kube", "kube-controller-manager"),
    `--kubeconfig=${kubeconfigPath}`,
    "--leader-elect=false",
    `--controllers=${NODE_CONTROLLERS.join(",")}`,
    `--service-account-private-key-file=${files.sa}`,
    `--root-ca-file=${files.ca}`,
    "--service-cluster-ip-range=10.0.0.0/24",
    "--secure-port=0",
    "--v=1",
  ];
}

function schedulerArgs(kubeconfigPath: string): string[] {
  return [
    peer("node", "kube-scheduler"),
    `--kubeconfig=${kubeconfigPath}`,
    `--authentication-kubeconfig=${kubeconfigPath}`,
    `--authorization-kubeconfig=${kubeconfigPath}`,
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    "--secure-port=10259",
    "--v=1",
  ];
}
