import { describe, expect, test } from "bun:test";
import { homedir } from "node:os";
import { KubeconfigError } from "./errors.ts";
import {
  type Connection,
  type ResolveOptions,
  resolveConnection,
  SERVICE_ACCOUNT_DIR,
} from "./kubeconfig.ts";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const SECRET = "s3cr3t-token-value";

function kubeconfig(
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
  ns = "apps",
): string {
  return `apiVersion: v1
kind: Config
current-context: dev
contexts:
  - name: other
    context: { cluster: nowhere, user: nobody }
  - name: dev
    context: { cluster: c1, user: u1, namespace: ${ns} }
clusters:
  - name: c1
    cluster: ${JSON.stringify({ server: "https://10.0.0.1:6443", ...cluster })}
users:
  - name: u1
    user: ${JSON.stringify(user)}
`;
}

function files(map: Record<string, string>): (p: string) => string {
  return (p) => {
    const v = map[p];
    if (v === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
    return v;
  };
}

const resolveWith = (o: Partial<ResolveOptions> & { files: Record<string, string> }) =>
  resolveConnection({ env: {}, homeDir: "/home/u", ...o, readFile: files(o.files) });

type Case = [
  name: string,
  opts: Partial<ResolveOptions> & { files: Record<string, string> },
  want: Connection,
];

const cases: Case[] = [
  [
    "--kubeconfig wins over KUBECONFIG and in-cluster; data fields are base64 PEM",
    {
      kubeconfigFlag: "/cfg/flag",
      env: { KUBECONFIG: "/cfg/env", KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      files: {
        "/cfg/flag": kubeconfig({ token: SECRET }, { "certificate-authority-data": b64(PEM) }),
        "/cfg/env": "garbage: [",
      },
    },
    {
      server: "https://10.0.0.1:6443",
      caPem: PEM,
      insecureSkipTlsVerify: false,
      token: SECRET,
      namespace: "apps",
    },
  ],
  [
    "KUBECONFIG list: missing files are skipped; relative paths resolve against the file's directory",
    {
      env: { KUBECONFIG: "/missing:/cfg/dir/kc:/cfg/later" },
      files: {
        "/cfg/dir/kc": kubeconfig(
          { tokenFile: "tok", "client-certificate": "../pki/c.crt", "client-key-data": b64(KEY) },
          { "certificate-authority": "ca.crt" },
        ),
        "/cfg/dir/ca.crt": PEM,
        "/cfg/pki/c.crt": PEM,
      },
    },
    {
      server: "https://10.0.0.1:6443",
      caPem: PEM,
      insecureSkipTlsVerify: false,
      token: undefined,
      tokenFile: "/cfg/dir/tok",
      clientCertPem: PEM,
      clientKeyPem: KEY,
      namespace: "apps",
    },
  ],
  [
    "KUBECONFIG list is merged like kubectl's: the first file to set a value or name wins; paths resolve against the file that holds them",
    {
      env: { KUBECONFIG: "/a/creds:/missing:/b/contexts" },
      files: {
        // Credentials and a cluster only: no current-context, no contexts.
        "/a/creds": `users:
  - name: u1
    user: { tokenFile: tok }
clusters:
  - name: c1
    cluster: { server: "https://first:6443", certificate-authority: ca.crt }
`,
        "/a/ca.crt": PEM,
        "/b/contexts": `current-context: dev
contexts:
  - name: dev
    context: { cluster: c1, user: u1, namespace: apps }
clusters:
  - name: c1
    cluster: { server: "https://second:6443" }
users:
  - name: u1
    user: { token: not-this }
`,
      },
    },
    {
      server: "https://first:6443",
      caPem: PEM,
      insecureSkipTlsVerify: false,
      token: undefined,
      tokenFile: "/a/tok",
      clientCertPem: undefined,
      clientKeyPem: undefined,
      namespace: "apps",
    },
  ],
  [
    "in-cluster, IPv6 in brackets, namespace from the service-account file",
    {
      env: { KUBERNETES_SERVICE_HOST: "fd00:10:96::1", KUBERNETES_SERVICE_PORT: "443", HOME: "/home/u" },
      files: {
        [`${SERVICE_ACCOUNT_DIR}/token`]: `${SECRET}\n`,
        [`${SERVICE_ACCOUNT_DIR}/ca.crt`]: PEM,
        [`${SERVICE_ACCOUNT_DIR}/namespace`]: "ops\n",
        "/home/u/.kube/config": kubeconfig({ token: "not-this" }),
      },
    },
    {
      server: "https://[fd00:10:96::1]:443",
      caPem: PEM,
      insecureSkipTlsVerify: false,
      tokenFile: `${SERVICE_ACCOUNT_DIR}/token`,
      namespace: "ops",
    },
  ],
  [
    "in-cluster: POD_NAMESPACE first",
    {
      env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443", POD_NAMESPACE: "pods-ns" },
      files: { [`${SERVICE_ACCOUNT_DIR}/token`]: SECRET, [`${SERVICE_ACCOUNT_DIR}/namespace`]: "ops" },
    },
    {
      server: "https://10.96.0.1:443",
      caPem: undefined,
      insecureSkipTlsVerify: false,
      tokenFile: `${SERVICE_ACCOUNT_DIR}/token`,
      namespace: "pods-ns",
    },
  ],
  [
    "~/.kube/config last; JSON works; trailing slash dropped, path prefix kept; insecure honoured",
    {
      files: {
        "/home/u/.kube/config": JSON.stringify({
          "current-context": "x",
          contexts: [{ name: "x", context: { cluster: "c" } }],
          clusters: [
            {
              name: "c",
              cluster: { server: "https://rancher/k8s/clusters/c-1/", "insecure-skip-tls-verify": true },
            },
          ],
        }),
      },
    },
    {
      server: "https://rancher/k8s/clusters/c-1",
      caPem: undefined,
      insecureSkipTlsVerify: true,
      token: undefined,
      tokenFile: undefined,
      clientCertPem: undefined,
      clientKeyPem: undefined,
      namespace: undefined,
    },
  ],
];

describe("resolveConnection", () => {
  for (const [name, opts, want] of cases) test(name, () => expect(resolveWith(opts)).toEqual(want));

  test("~/.kube/config: HOME first, else the account's home directory (os.homedir)", () => {
    const read: string[] = [];
    const readFile = (p: string) => {
      read.push(p);
      throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
    };
    expect(() => resolveConnection({ env: { HOME: "/home/h" }, readFile })).toThrow("/home/h/.kube/config");
    expect(() => resolveConnection({ env: {}, readFile })).toThrow(`${homedir()}/.kube/config`);
    expect(read).toEqual(["/home/h/.kube/config", `${homedir()}/.kube/config`]);
  });
});

// Two clusters in one file, as a laptop's kubeconfig has them; current-context is dev.
const TWO = kubeconfig({ token: "t1" })
  .replace(
    "  - name: other\n    context: { cluster: nowhere, user: nobody }",
    "  - name: prod\n    context: { cluster: c2, user: u1, namespace: live }",
  )
  .replace("clusters:\n", 'clusters:\n  - name: c2\n    cluster: { server: "https://10.0.0.2:6443" }\n');

describe("--context", () => {
  const where = (o: Partial<ResolveOptions>) => {
    const c = resolveWith({ kubeconfigFlag: "/k", files: { "/k": TWO }, ...o });
    return `${c.server} ${c.namespace}`;
  };
  test("without it, current-context", () => expect(where({})).toBe("https://10.0.0.1:6443 apps"));
  test("names another context of the file", () =>
    expect(where({ context: "prod" })).toBe("https://10.0.0.2:6443 live"));
  test("applies to a KUBECONFIG list too", () =>
    expect(resolveWith({ env: { KUBECONFIG: "/a:/k" }, files: { "/k": TWO }, context: "prod" }).server).toBe(
      "https://10.0.0.2:6443",
    ));
  test("skips in-cluster configuration: a context is a kubeconfig's", () =>
    expect(
      resolveWith({
        env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
        files: { "/home/u/.kube/config": TWO },
        context: "prod",
      }).server,
    ).toBe("https://10.0.0.2:6443"));
  test("an unknown context names the known ones", () =>
    expect(() => where({ context: "staging" })).toThrow(
      'Cannot use --context "staging": no such context in kubeconfig /k (known contexts: "prod", "dev")',
    ));
});

const bad: Array<
  [name: string, opts: Partial<ResolveOptions> & { files: Record<string, string> }, error: RegExp]
> = [
  ["--kubeconfig unreadable", { kubeconfigFlag: "/nope", files: {} }, /Cannot read kubeconfig \/nope/],
  ["no KUBECONFIG file exists", { env: { KUBECONFIG: "/a:/b" }, files: {} }, /no file of KUBECONFIG exists/],
  ["nothing at all", { files: {} }, /Cannot find a cluster/],
  [
    "KUBECONFIG files of which none sets current-context",
    { env: { KUBECONFIG: "/a:/b" }, files: { "/a": "clusters: []\n", "/b": "users: []\n" } },
    /Invalid kubeconfig KUBECONFIG \(\/a, \/b\): current-context is not set/,
  ],
  [
    "one unreadable YAML file in KUBECONFIG is an error, not skipped",
    { env: { KUBECONFIG: "/a:/b" }, files: { "/a": "a: [", "/b": kubeconfig({}) } },
    /Invalid kubeconfig \/a: not YAML or JSON/,
  ],
  [
    "a later file's bad field is named with its file",
    {
      env: { KUBECONFIG: "/a:/b" },
      files: { "/a": kubeconfig({}), "/b": "users:\n  - name: u9\n    user: { token: 12345678 }\n" },
    },
    /Invalid kubeconfig \/b: users\[0\]\.user\.token/,
  ],
  [
    "in-cluster without a token",
    { env: { KUBERNETES_SERVICE_HOST: "h", KUBERNETES_SERVICE_PORT: "1" }, files: {} },
    /token is missing or empty/,
  ],
  [
    "in-cluster with only one variable",
    { env: { KUBERNETES_SERVICE_HOST: "h" }, files: {} },
    /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT/,
  ],
  ["not YAML", { kubeconfigFlag: "/k", files: { "/k": "a: [" } }, /not YAML or JSON/],
  [
    "server missing is named by path",
    { kubeconfigFlag: "/k", files: { "/k": kubeconfig({}, { server: undefined }) } },
    /clusters\[0\]\.cluster\.server/,
  ],
  [
    "a server URL with a user and password is refused, the password not echoed",
    {
      kubeconfigFlag: "/k",
      files: { "/k": kubeconfig({}, { server: `https://admin:${SECRET}@10.0.0.1:6443` }) },
    },
    /clusters\[0\]\.cluster\.server: must not contain a user name or password; use a token, tokenFile or client certificate/,
  ],
  [
    "wrong type named by path, value not echoed",
    { kubeconfigFlag: "/k", files: { "/k": kubeconfig({ token: 12345678 }) } },
    /users\[0\]\.user\.token/,
  ],
  [
    "context not found",
    {
      kubeconfigFlag: "/k",
      files: { "/k": kubeconfig({}).replace("current-context: dev", "current-context: zz") },
    },
    /current-context "zz" not found/,
  ],
  [
    "exec plugin without apiVersion",
    { kubeconfigFlag: "/k", files: { "/k": kubeconfig({ exec: { command: "aws" } }) } },
    /users\[u1\]\.user\.exec: exec plugin: invalid apiVersion ""/,
  ],
  [
    "CA data that is not PEM",
    { kubeconfigFlag: "/k", files: { "/k": kubeconfig({}, { "certificate-authority-data": b64("hello") }) } },
    /certificate-authority-data is not base64-encoded PEM/,
  ],
  [
    "certificate without key",
    { kubeconfigFlag: "/k", files: { "/k": kubeconfig({ "client-certificate-data": b64(PEM) }) } },
    /needs both client-certificate and client-key/,
  ],
  [
    "CA file missing",
    { kubeconfigFlag: "/k/c", files: { "/k/c": kubeconfig({}, { "certificate-authority": "ca.pem" }) } },
    /certificate-authority file \/k\/ca.pem is not readable/,
  ],
];

describe("resolveConnection errors", () => {
  for (const [name, opts, error] of bad) {
    test(name, () => {
      let thrown: unknown;
      try {
        resolveWith(opts);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(KubeconfigError);
      expect((thrown as Error).message).toMatch(error);
      expect((thrown as Error).message).not.toContain("12345678");
      expect((thrown as Error).message).not.toContain(SECRET);
    });
  }
});
