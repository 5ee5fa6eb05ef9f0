// What the node tier needs besides the peers: Debian's containerd, runc and CNI plugins, the
// tools that build and push its images, the commands node.sh and the cluster run, and root
// (namespaces, mounts and cgroups). Missing, a file skips with one line each; under CI it fails.
import { test } from "bun:test";
import { inCi, needTools } from "../../support/tools.ts";
import { needPeers, type PeerModule } from "../peers.ts";

export function needNode(file: string, morePeers: PeerModule[] = []): boolean {
  const tools = needTools(
    [
      { tool: "containerd", apt: "containerd" },
      { tool: "ctr", apt: "containerd" },
      { tool: "runc", apt: "runc" },
      { tool: "/usr/lib/cni/bridge", apt: "containernetworking-plugins" },
      { tool: "/usr/lib/cni/host-local", apt: "containernetworking-plugins" },
      { tool: "iptables-save", apt: "iptables" },
      { tool: "ip", apt: "iproute2" },
      { tool: "unshare", apt: "util-linux" },
      { tool: "nsenter", apt: "util-linux" },
      { tool: "buildah", apt: "buildah" },
      { tool: "skopeo", apt: "skopeo" },
      { tool: "docker-registry", apt: "docker-registry" },
      { tool: "busybox", apt: "busybox-static" },
    ],
    file,
  );
  const peers = needPeers(["kube", "node", ...morePeers], file);
  let root = false;
  if (process.getuid?.() !== 0) {
    root = true;
    const line = `skip: ${file} needs root (network and mount namespaces, cgroups)`;
    if (!inCi()) console.log(line);
    else
      test("needs root", () => {
        throw new Error(`${line}: CI is set, so this is a failure`);
      });
  }
  return tools || peers || root;
}
