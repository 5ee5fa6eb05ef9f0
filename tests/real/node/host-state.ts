// What a node could leave on the host, read before a cluster starts and after it stops: the host's
// mounts, the cgroup directories named for the cluster, the host's iptables rules (both
// backends), the kernel settings the kubelet and kube-proxy are known to set, network namespaces
// and interfaces, the paths a node writes by default, and processes still in the cluster's network namespace or naming its directory.
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

export interface HostState {
  mounts: string[];
  cgroups: string[];
  iptables: string[];
  sysctls: string[];
  netns: string[];
  links: string[];
  /** Which of the paths a node hard-codes exist on the host. */
  paths: string[];
}

// Where the kubelet, containerd, runc, the CNI plugins and iptables write unless told otherwise.
export const NODE_PATHS = [
  "/var/lib/kubelet",
  "/var/lib/containerd",
  "/var/lib/cni",
  "/var/log/containers",
  "/var/log/pods",
  "/run/containerd",
  "/run/netns",
  "/run/xtables.lock",
  "/etc/cni/net.d",
  "/etc/kubernetes",
];

// Written by the kubelet (its kernel defaults) and kube-proxy (iptables mode); the network ones
// are per namespace on these kernels, read here for the host's namespace.
export const SYSCTLS = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
  "net/ipv4/ip_forward",
  "net/ipv4/conf/all/route_localnet",
  "net/bridge/bridge-nf-call-iptables",
  "net/netfilter/nf_conntrack_max",
  "net/netfilter/nf_conntrack_tcp_timeout_established",
  "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
  "net/netfilter/nf_conntrack_tcp_be_liberal",
];

function sh(cmd: string[]): string {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString() : "";
}

// Mount point, filesystem and source: ids and options may be renumbered by the kernel.
function mounts(): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .trim()
    .split("\n")
    .map((l) => {
      const f = l.split(" ");
      const dash = f.indexOf("-");
      return `${f[4]} ${f[dash + 1]} ${f[dash + 2]}`;
    })
    .sort();
}

function iptables(): string[] {
  // Counters change with traffic; the rules do not.
  const rules = (tool: string) =>
    sh([tool])
      .split("\n")
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((l) => `${tool} ${l.replace(/\[\d+:\d+\]/g, "")}`);
  return [...rules("iptables-save"), ...rules("iptables-legacy-save"), ...rules("ip6tables-save")];
}

export function hostState(cgroupName: string): HostState {
  const cgroups = readdirSync("/sys/fs/cgroup")
    .map((h) => `/sys/fs/cgroup/${h}/${cgroupName}`)
    .filter((p) => existsSync(p));
  return {
    mounts: mounts(),
    cgroups,
    iptables: iptables(),
    sysctls: SYSCTLS.map((k) => {
      try {
        return `${k}=${readFileSync(`/proc/sys/${k}`, "utf8").trim()}`;
      } catch {
        return `${k} absent`;
      }
    }),
    netns: sh(["ip", "netns", "list"]).trim().split("\n").filter(Boolean),
    links: sh(["ip", "-o", "link", "show"])
      .trim()
      .split("\n")
      .map((l) => l.split(":")[1]?.trim() ?? l),
    paths: NODE_PATHS.filter((p) => existsSync(p)),
  };
}

/** Processes in the network namespace `netns` (e.g. "net:[4026532]") or naming `dir` on their command line. */
export function leftoverProcesses(netns: string, dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (pid === String(process.pid)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue; // exited, not yet reaped
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      const ns = readlinkSync(`/proc/${pid}/ns/net`);
      if (ns === netns || cmd.includes(dir)) found.push(`${pid} ${cmd}`);
    } catch {
      // gone while read
    }
  }
  return found;
}
