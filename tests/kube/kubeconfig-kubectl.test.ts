// Our KUBECONFIG merge against kubectl's own: for each layout of files, `kubectl config view
// --minify --flatten` names the cluster, user, namespace and CA that client-go settles on, and
// resolveConnection must settle on the same ones (the first file to set a value or name wins;
// relative paths resolve against the file that holds them; missing files are skipped).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { resolveConnection } from "../../lib/kube/kubeconfig.ts";
import { needTool } from "../support/tools.ts";

const noKubectl = needTool("kubectl", { apt: "kubernetes-client" });

const root = mkdtempSync(join(tmpdir(), "image-refresh-kubeconfigs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const pem = (n: string) => `-----BEGIN CERTIFICATE-----\n${n}\n-----END CERTIFICATE-----\n`;
const cluster = (name: string, server: string, ca?: string) =>
  `  - name: ${name}\n    cluster: { server: "${server}"${ca ? `, certificate-authority: ${ca}` : ""} }\n`;
const user = (name: string, token: string) => `  - name: ${name}\n    user: { token: ${token} }\n`;
const context = (name: string, c: string, u: string, ns: string) =>
  `  - name: ${name}\n    context: { cluster: ${c}, user: ${u}, namespace: ${ns} }\n`;

type Layout = { name: string; files: Record<string, string>; list: string[] };

const LAYOUTS: Layout[] = [
  {
    name: "credentials first, contexts later; the earlier cluster and user win",
    files: {
      "a/creds": `users:\n${user("u1", "tok-a")}clusters:\n${cluster("c1", "https://first:6443", "ca.crt")}`,
      "a/ca.crt": pem("CA-A"),
      "b/ctx": `current-context: dev\ncontexts:\n${context("dev", "c1", "u1", "apps")}clusters:\n${cluster("c1", "https://second:6443", "ca.crt")}users:\n${user("u1", "tok-b")}`,
      "b/ca.crt": pem("CA-B"),
    },
    list: ["a/creds", "missing", "b/ctx"],
  },
  {
    name: "the first current-context wins even when a later file sets another",
    files: {
      one: `current-context: east\ncontexts:\n${context("east", "ce", "ue", "e")}\nclusters:\n${cluster("ce", "https://east:6443")}users:\n${user("ue", "tok-east")}`,
      two: `current-context: west\ncontexts:\n${context("west", "cw", "uw", "w")}${context("east", "cw", "uw", "not-this")}clusters:\n${cluster("cw", "https://west:6443")}users:\n${user("uw", "tok-west")}`,
    },
    list: ["one", "two"],
  },
  {
    name: "an empty current-context does not win; the context comes from the second file",
    files: {
      first: `current-context: ""\nclusters:\n${cluster("c", "https://c:6443", "pki/ca.pem")}`,
      "pki/ca.pem": pem("CA-REL"),
      "second/cfg": `current-context: x\ncontexts:\n${context("x", "c", "u", "default")}users:\n${user("u", "tok-x")}`,
    },
    list: ["first", "second/cfg"],
  },
];

function kubectlView(list: string[]): { server: string; token?: string; namespace?: string; ca?: string } {
  const r = Bun.spawnSync(["kubectl", "config", "view", "--minify", "--flatten", "--raw", "-o", "json"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: root, KUBECONFIG: list.join(":") },
  });
  if (r.exitCode !== 0) throw new Error(`kubectl config view failed: ${r.stderr}`);
  const v = JSON.parse(r.stdout.toString());
  const ca = v.clusters[0].cluster["certificate-authority-data"];
  return {
    server: v.clusters[0].cluster.server,
    token: v.users?.[0]?.user?.token,
    namespace: v.contexts[0].context.namespace,
    ca: ca ? Buffer.from(ca, "base64").toString("utf8") : undefined,
  };
}

describe.skipIf(noKubectl)("KUBECONFIG lists resolve as kubectl resolves them", () => {
  LAYOUTS.forEach((layout, i) => {
    test(layout.name, () => {
      const dir = join(root, String(i));
      for (const [rel, text] of Object.entries(layout.files)) {
        mkdirSync(dirname(join(dir, rel)), { recursive: true });
        writeFileSync(join(dir, rel), text);
      }
      const list = layout.list.map((p) => join(dir, p));
      const want = kubectlView(list);
      const got = resolveConnection({ env: { KUBECONFIG: list.join(":") }, homeDir: root });
      const seen: ReturnType<typeof kubectlView> = {
        server: got.server,
        token: got.token,
        namespace: got.namespace,
        ca: got.caPem,
      };
      expect(seen).toEqual(want);
    });
  });
});
