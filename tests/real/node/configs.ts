// The node's configuration files: containerd, the CNI network, the kubelet and kube-proxy. Every
// address is from the documentation ranges (RFC 5737), on interfaces inside the cluster's own
// network namespace, so nothing here can reach or be reached from anywhere else.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** The node's address: the kubelet refuses a loopback one, so it sits on a veth inside the namespace. */
export const NODE_IP = "192.0.2.1";
export const POD_CIDR = "198.51.100.0/24";
export const SERVICE_CIDR = "10.0.0.0/24";
/** The `kubernetes` Service's ClusterIP: the first of the service range. */
export const KUBERNETES_SERVICE_IP = "10.0.0.1";
export const NODE_NAME = "real-node";
export const APISERVER_PORT = 6443;
export const REGISTRY_PORT = 5000;
/** Image references name the registry by this host; containerd's mirror entry maps it to plain HTTP. */
export const REGISTRY_HOST = `${NODE_IP}:${REGISTRY_PORT}`;
export const PAUSE_IMAGE = `${REGISTRY_HOST}/pause:node-tier`;

export function containerdToml(dir: string): string {
  return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
[grpc]
  address = "${dir}/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  disable_apparmor = true
  # runc cannot write oom_score_adj without CAP_SYS_RESOURCE, which these machines lack.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${dir}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."${REGISTRY_HOST}"]
    endpoint = ["http://${REGISTRY_HOST}"]
`;
}

/** A bridge with host-local addresses: enough for a single node, and nothing masqueraded out. */
export function cniConflist(dir: string): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "node-tier",
    plugins: [
      {
        type: "bridge",
        bridge: "cni0",
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: POD_CIDR }]],
          routes: [{ dst: "0.0.0.0/0" }],
          dataDir: join(dir, "cni", "ipam"),
        },
      },
    ],
  });
}

export interface KubeletTuning {
  /** The longest CrashLoopBackOff wait; the default 5 minutes is longer than a story. */
  crashLoopMax?: string;
}

export function kubeletConfig(dir: string, cgroupRoot: string, t: KubeletTuning = {}): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /${cgroupRoot}
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://${dir}/containerd.sock
podLogsDir: ${dir}/kubelet/pod-logs
volumePluginDir: ${dir}/kubelet/volume-plugins
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
maxPods: 50
crashLoopBackOff: {maxContainerRestartPeriod: ${t.crashLoopMax ?? "10s"}}
`;
}

/** iptables mode; conntrack limits zeroed so kube-proxy leaves the host-wide ones alone. */
export function kubeProxyConfig(kubeconfig: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: ${kubeconfig}}
mode: iptables
hostnameOverride: ${NODE_NAME}
clusterCIDR: ${POD_CIDR}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`;
}

export function registryConfig(dataDir: string): string {
  return [
    "version: 0.1",
    "log: {level: warn, accesslog: {disabled: true}}",
    `storage: {filesystem: {rootdirectory: ${dataDir}}, delete: {enabled: true}}`,
    `http: {addr: "${REGISTRY_HOST}"}`,
    "",
  ].join("\n");
}

export function writeNodeConfigs(
  dir: string,
  c: { cgroupRoot: string; adminKubeconfig: string } & KubeletTuning,
) {
  const files = {
    containerd: join(dir, "containerd.toml"),
    kubelet: join(dir, "kubelet", "config.yaml"),
    kubeProxy: join(dir, "kube-proxy.yaml"),
    registry: join(dir, "registry.yml"),
  };
  writeFileSync(files.containerd, containerdToml(dir));
  writeFileSync(join(dir, "cni", "net.d", "10-node-tier.conflist"), cniConflist(dir));
  writeFileSync(files.kubelet, kubeletConfig(dir, c.cgroupRoot, c));
  writeFileSync(files.kubeProxy, kubeProxyConfig(c.adminKubeconfig));
  writeFileSync(files.registry, registryConfig(join(dir, "registry")));
  return files;
}
