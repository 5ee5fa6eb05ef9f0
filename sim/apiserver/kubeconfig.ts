// A kubeconfig that kubectl and the product's own kubeconfig loader both accept. JSON is
// valid YAML, but a real-looking block-style file exercises a client's YAML parsing better.

export interface KubeconfigOptions {
  server: string;
  token?: string;
  caPem?: string;
  insecure?: boolean;
  namespace?: string;
}

const quote = (s: string): string => JSON.stringify(s);

export function renderKubeconfig(o: KubeconfigOptions): string {
  const cluster = [`    server: ${o.server}`];
  if (o.insecure) cluster.push("    insecure-skip-tls-verify: true");
  else if (o.caPem)
    cluster.push(`    certificate-authority-data: ${Buffer.from(o.caPem).toString("base64")}`);
  const user = o.token === undefined ? "  user: {}" : `  user:\n    token: ${quote(o.token)}`;
  const context = ["    cluster: sim", "    user: sim"];
  if (o.namespace) context.push(`    namespace: ${quote(o.namespace)}`);
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: sim",
    "  cluster:",
    ...cluster,
    "users:",
    "- name: sim",
    user,
    "contexts:",
    "- name: sim",
    "  context:",
    ...context,
    "current-context: sim",
    "preferences: {}",
    "",
  ].join("\n");
}
